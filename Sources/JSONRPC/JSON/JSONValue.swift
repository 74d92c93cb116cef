/// A JSON value as it travels in a JSON-RPC frame.
///
/// Integers that fit in `Int64` stay `.int`; every other number is `.double`. Objects are
/// unordered; ``serialized()`` writes their members sorted by key so output is stable.
/// Read and written by ``JSONCodec`` (Foundation), like every other JSON in blefleet.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue {
    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The Boolean, if this is a Boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer, if this is an integer or a double with an exact integer value.
    public var int64Value: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    /// The number as a `Double`, if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The member named `key`, if this is an object that has one.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// What kind of value this is, as a user reads it in an error message: "a string", "an object"…
    public var kindDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue: CustomStringConvertible {
    /// Reads one JSON text; throws a `DecodingError` (see ``JSONCodec/describe(_:)``).
    public init(parsing bytes: some Collection<UInt8>) throws {
        self = try JSONCodec.decode(JSONValue.self, from: bytes)
    }

    /// Reads one JSON text.
    public init(parsing text: String) throws {
        try self.init(parsing: Array(text.utf8))
    }

    /// Compact JSON text (UTF-8), object members sorted by key. Non-finite doubles, which JSON
    /// cannot express, are written as `null`.
    public func serialized() -> [UInt8] {
        (try? JSONCodec.encode(self)) ?? Array("null".utf8)
    }

    /// The compact JSON text of the value.
    public var description: String {
        String(decoding: serialized(), as: UTF8.self)
    }
}
