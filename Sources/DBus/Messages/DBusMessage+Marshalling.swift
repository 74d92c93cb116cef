internal import CDBus

/// Appending ``DBusValue``s to a message and reading them back, through `DBusMessageIter`.
extension DBusMessage {
    /// Appends already validated values. Only out-of-memory can fail here.
    func append(_ values: [DBusValue]) throws(DBusError) {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iter)
        for value in values {
            guard Self.append(value, to: &iter) else { throw DBusError.noMemory("appending arguments") }
        }
    }

    private static func appendBasic<T: BitwiseCopyable>(_ type: Int32, _ value: T, to iter: inout DBusMessageIter) -> Bool {
        var copy = value
        return dbus_message_iter_append_basic(&iter, type, &copy) != 0
    }

    private static func appendString(_ type: Int32, _ value: String, to iter: inout DBusMessageIter) -> Bool {
        value.withCString { pointer in
            var p: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iter, type, &p) != 0
        }
    }

    private static func withContainer(
        _ type: Int32, _ signature: String?, in iter: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened = signature.withOptionalCString { dbus_message_iter_open_container(&iter, type, $0, &sub) }
        guard opened != 0 else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return appendBasic(CDBUS_TYPE_BYTE, v, to: &iter)
        case .boolean(let v): return appendBasic(CDBUS_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0), to: &iter)
        case .int16(let v): return appendBasic(CDBUS_TYPE_INT16, v, to: &iter)
        case .uint16(let v): return appendBasic(CDBUS_TYPE_UINT16, v, to: &iter)
        case .int32(let v): return appendBasic(CDBUS_TYPE_INT32, v, to: &iter)
        case .uint32(let v): return appendBasic(CDBUS_TYPE_UINT32, v, to: &iter)
        case .int64(let v): return appendBasic(CDBUS_TYPE_INT64, v, to: &iter)
        case .uint64(let v): return appendBasic(CDBUS_TYPE_UINT64, v, to: &iter)
        case .double(let v): return appendBasic(CDBUS_TYPE_DOUBLE, v, to: &iter)
        case .string(let v): return appendString(CDBUS_TYPE_STRING, v, to: &iter)
        case .objectPath(let v): return appendString(CDBUS_TYPE_OBJECT_PATH, v, to: &iter)
        case .signature(let v): return appendString(CDBUS_TYPE_SIGNATURE, v, to: &iter)
        case .bytes(let bytes):
            return withContainer(CDBUS_TYPE_ARRAY, "y", in: &iter) { sub in
                bytes.withUnsafeBufferPointer { buffer in
                    // libdbus wants a non-NULL pointer even for zero bytes.
                    var zero: UInt8 = 0
                    return withUnsafePointer(to: &zero) { fallback in
                        var pointer: UnsafePointer<UInt8>? = buffer.baseAddress ?? fallback
                        return dbus_message_iter_append_fixed_array(&sub, CDBUS_TYPE_BYTE, &pointer, Int32(buffer.count)) != 0
                    }
                }
            }
        case .array(let element, let values):
            return withContainer(CDBUS_TYPE_ARRAY, element, in: &iter) { sub in
                values.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let key, let valueType, let entries):
            return withContainer(CDBUS_TYPE_ARRAY, "{" + key + valueType + "}", in: &iter) { sub in
                entries.allSatisfy { entry in
                    withContainer(CDBUS_TYPE_DICT_ENTRY, nil, in: &sub) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return withContainer(CDBUS_TYPE_STRUCT, nil, in: &iter) { sub in
                fields.allSatisfy { append($0, to: &sub) }
            }
        case .variant(let inner):
            return withContainer(CDBUS_TYPE_VARIANT, inner.signature, in: &iter) { sub in
                append(inner, to: &sub)
            }
        }
    }

    // MARK: Reading

    /// Decodes every argument of the message.
    func arguments() throws(DBusError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iter) != 0 else { return [] }
        return try Self.readAll(&iter)
    }

    private static func readAll(_ iter: inout DBusMessageIter) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != CDBUS_TYPE_INVALID {
            values.append(try read(&iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    private static func basic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ zero: T) -> T {
        var value = zero
        dbus_message_iter_get_basic(&iter, &value)
        return value
    }

    private static func string(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    /// The signature of the value at `iter` (freed with `dbus_free`).
    private static func signature(_ iter: inout DBusMessageIter) -> String {
        guard let pointer = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(pointer) }
        return String(cString: pointer)
    }

    static func read(_ iter: inout DBusMessageIter) throws(DBusError) -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iter)
        switch type {
        case CDBUS_TYPE_BYTE: return .byte(basic(&iter, UInt8(0)))
        case CDBUS_TYPE_BOOLEAN: return .boolean(basic(&iter, dbus_bool_t(0)) != 0)
        case CDBUS_TYPE_INT16: return .int16(basic(&iter, Int16(0)))
        case CDBUS_TYPE_UINT16: return .uint16(basic(&iter, UInt16(0)))
        case CDBUS_TYPE_INT32: return .int32(basic(&iter, Int32(0)))
        case CDBUS_TYPE_UINT32: return .uint32(basic(&iter, UInt32(0)))
        case CDBUS_TYPE_INT64: return .int64(basic(&iter, Int64(0)))
        case CDBUS_TYPE_UINT64: return .uint64(basic(&iter, UInt64(0)))
        case CDBUS_TYPE_DOUBLE: return .double(basic(&iter, Double(0)))
        case CDBUS_TYPE_STRING: return .string(string(&iter))
        case CDBUS_TYPE_OBJECT_PATH: return .objectPath(string(&iter))
        case CDBUS_TYPE_SIGNATURE: return .signature(string(&iter))
        case CDBUS_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try read(&sub))
        case CDBUS_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .structure(try readAll(&sub))
        case CDBUS_TYPE_ARRAY:
            return try readArray(&iter)
        case CDBUS_TYPE_UNIX_FD:
            // The fd is a duplicate we own: close it, then refuse the type.
            let fd = basic(&iter, Int32(-1))
            if fd >= 0 { _ = closeFileDescriptor(fd) }
            throw DBusError.invalidArgs("The message carries a Unix file descriptor (type h), which this library does not support.")
        default:
            throw DBusError.invalidArgs("The message carries an unknown D-Bus type code \(type).")
        }
    }

    private static func readArray(_ iter: inout DBusMessageIter) throws(DBusError) -> DBusValue {
        let fullSignature = signature(&iter)  // "a…"
        let element = String(fullSignature.dropFirst())
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        switch dbus_message_iter_get_element_type(&iter) {
        case CDBUS_TYPE_BYTE:
            var pointer: UnsafeRawPointer? = nil
            var count: Int32 = 0
            if dbus_message_iter_get_arg_type(&sub) != CDBUS_TYPE_INVALID {
                dbus_message_iter_get_fixed_array(&sub, &pointer, &count)
            }
            guard let pointer, count > 0 else { return .bytes([]) }
            return .bytes(Array(UnsafeBufferPointer(start: pointer.assumingMemoryBound(to: UInt8.self), count: Int(count))))
        case CDBUS_TYPE_DICT_ENTRY:
            // element is "{kv}": one basic key character, then the value type.
            let inner = element.dropFirst().dropLast()
            let key = String(inner.prefix(1))
            let value = String(inner.dropFirst())
            var entries: [DBusDictEntry] = []
            while dbus_message_iter_get_arg_type(&sub) != CDBUS_TYPE_INVALID {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                let k = try read(&pair)
                dbus_message_iter_next(&pair)
                let v = try read(&pair)
                entries.append(DBusDictEntry(key: k, value: v))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(keySignature: key, valueSignature: value, entries)
        default:
            return .array(elementSignature: element, try readAll(&sub))
        }
    }
}
