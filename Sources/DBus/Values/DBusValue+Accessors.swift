extension DBusValue {
    /// The value with every enclosing variant removed.
    public var unwrapped: DBusValue {
        var value = self
        while case .variant(let inner) = value { value = inner }
        return value
    }

    /// The text of a string, object path or signature.
    public var string: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    public var bool: Bool? {
        if case .boolean(let v) = unwrapped { v } else { nil }
    }

    public var uint8: UInt8? {
        if case .byte(let v) = unwrapped { v } else { nil }
    }

    public var int16: Int16? {
        if case .int16(let v) = unwrapped { v } else { nil }
    }

    public var uint16: UInt16? {
        if case .uint16(let v) = unwrapped { v } else { nil }
    }

    public var int32: Int32? {
        if case .int32(let v) = unwrapped { v } else { nil }
    }

    public var uint32: UInt32? {
        if case .uint32(let v) = unwrapped { v } else { nil }
    }

    public var int64: Int64? {
        if case .int64(let v) = unwrapped { v } else { nil }
    }

    public var uint64: UInt64? {
        if case .uint64(let v) = unwrapped { v } else { nil }
    }

    public var double: Double? {
        if case .double(let v) = unwrapped { v } else { nil }
    }

    /// `ay` contents: `.bytes`, or an array whose elements are all `.byte`.
    public var bytes: [UInt8]? {
        switch unwrapped {
        case .bytes(let b):
            return b
        case .array(let element, let values) where element == "y":
            var result: [UInt8] = []
            result.reserveCapacity(values.count)
            for value in values {
                guard case .byte(let b) = value else { return nil }
                result.append(b)
            }
            return result
        default:
            return nil
        }
    }

    /// Array elements (`.bytes` as `.byte` values). Dictionaries are not arrays here.
    public var array: [DBusValue]? {
        switch unwrapped {
        case .array(_, let values): values
        case .bytes(let b): b.map(DBusValue.byte)
        default: nil
        }
    }

    /// A dictionary with string-like keys (`s`, `o`, `g`); values are kept as they are
    /// (variants included). A repeated key keeps its last value.
    public var dictionary: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value
        }
        return result
    }

    public var structure: [DBusValue]? {
        if case .structure(let fields) = unwrapped { fields } else { nil }
    }

    /// Builds an `a{sv}` with the keys sorted; each value is wrapped in a variant unless it
    /// already is one.
    public static func stringVariantDictionary(_ entries: [String: DBusValue]) -> DBusValue {
        let sorted = entries.sorted { $0.key < $1.key }
        return .dictionary(
            keySignature: "s", valueSignature: "v",
            sorted.map { key, value in
                let wrapped: DBusValue = if case .variant = value { value } else { .variant(value) }
                return DBusDictEntry(key: .string(key), value: wrapped)
            })
    }
}
