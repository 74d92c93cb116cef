extension JournalLogHandler {
    /// The journal field name for a swift-log metadata key, or `nil` when nothing usable is
    /// left of it.
    ///
    /// Letters are uppercased, `.` and `-` become `_`, any other character that is not an ASCII
    /// letter, digit or `_` is dropped, leading characters are dropped until the first letter,
    /// and the name is cut to journald's 64 characters. A name equal to one of
    /// ``reservedFields`` gets a `META_` prefix so metadata never overrides `MESSAGE`,
    /// `PRIORITY` and the like. Examples: `ble.address` → `BLE_ADDRESS`, `rpc.method` →
    /// `RPC_METHOD`, `message` → `META_MESSAGE`, `_pid` → `PID`.
    public static func fieldName(forMetadataKey key: String) -> String? {
        var name = ""
        for scalar in key.unicodeScalars {
            switch scalar {
            case "a"..."z":
                name.unicodeScalars.append(Unicode.Scalar(scalar.value - 32)!)
            case "A"..."Z":
                name.unicodeScalars.append(scalar)
            case "0"..."9", "_":
                if !name.isEmpty { name.unicodeScalars.append(scalar) }
            case ".", "-":
                if !name.isEmpty { name.append("_") }
            default:
                continue
            }
        }
        guard !name.isEmpty else { return nil }
        if reservedFields.contains(name) { name = "META_" + name }
        return String(name.prefix(maximumFieldNameLength))
    }

    /// journald rejects longer field names.
    static let maximumFieldNameLength = 64
}
