extension DBusValue {
    /// The D-Bus specification's limit on nested containers (arrays, structs, variants).
    static let maximumDepth = 64

    /// Checks everything libdbus would abort on, before any byte is appended: strings,
    /// paths, signatures, and that every array element / dict entry has the declared type.
    func validate(depth: Int = 0) throws(DBusError) {
        if depth > Self.maximumDepth {
            throw DBusError.invalidArgs("The value nests containers deeper than D-Bus allows (\(Self.maximumDepth) levels).")
        }
        switch self {
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .bytes:
            return
        case .string(let s):
            try DBusNames.validateString(s)
        case .objectPath(let p):
            try DBusNames.validateObjectPath(p)
        case .signature(let g):
            try DBusNames.validateSignature(g)
        case .array(let element, let values):
            try DBusNames.validateSingleType(element)
            for value in values {
                let actual = value.signature
                guard actual == element else {
                    throw DBusError.invalidArgs(
                        "An array of \"\(element)\" contains a value of type \"\(actual)\".")
                }
                try value.validate(depth: depth + 1)
            }
            try DBusNames.validateSingleType("a" + element)
        case .dictionary(let key, let valueType, let entries):
            guard key.count == 1, "ybnqiuxtdsog".contains(key) else {
                throw DBusError.invalidArgs("A dictionary key must be a basic type, not \"\(key)\".")
            }
            try DBusNames.validateSingleType(valueType)
            for entry in entries {
                guard entry.key.signature == key, entry.value.signature == valueType else {
                    throw DBusError.invalidArgs(
                        "A dictionary a{\(key)\(valueType)} contains an entry of types \"\(entry.key.signature)\" → \"\(entry.value.signature)\".")
                }
                try entry.key.validate(depth: depth + 2)
                try entry.value.validate(depth: depth + 2)
            }
            try DBusNames.validateSingleType(signature)
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError.invalidArgs("A D-Bus structure needs at least one field.") }
            for field in fields { try field.validate(depth: depth + 1) }
            try DBusNames.validateSingleType(signature)
        case .variant(let inner):
            try inner.validate(depth: depth + 1)
            try DBusNames.validateSingleType(inner.signature)
        }
    }
}
