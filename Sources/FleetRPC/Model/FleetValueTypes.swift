public import JSONRPC

/// The parameter types of blefleet's methods that are strings (or lists) of a shape of
/// their own; the dispatcher checks them before a handler runs.
extension RPCValueType {
    /// A board selection: "all", an address, a name or alias, a glob, or a list of those.
    public static let selection = RPCValueType.custom(
        RPCCustomType(
            name: "selection",
            expectation: "\"all\", a board address, name, alias or glob, or a non-empty list of those",
            jsonSchema: [
                "oneOf": [
                    ["type": "string", "minLength": 1],
                    ["type": "array", "items": ["type": "string", "minLength": 1], "minItems": 1],
                ]
            ],
            problem: { value in
                do throws(SelectionError) {
                    _ = try Selection(validating: value)
                    return nil
                } catch {
                    return error.description
                }
            }))

    /// A Bluetooth address, `AA:BB:CC:DD:EE:FF`.
    public static let address = RPCValueType.custom(
        RPCCustomType(
            name: "address", expectation: "a Bluetooth address like \"AA:BB:CC:DD:EE:FF\"",
            jsonSchema: ["type": "string", "pattern": "^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"],
            problem: { value in value.stringValue.map(BoardAddress.isValid) == true ? nil : "" }))

    /// A UUID, 128-bit form (`0000180f-0000-1000-8000-00805f9b34fb`) or 16-bit (`180f`).
    public static let uuid = RPCValueType.custom(
        RPCCustomType(
            name: "uuid",
            expectation: "a UUID like \"d888a9c3-f3cc-11ed-a05b-0242ac120003\" or a 16-bit one like \"180f\"",
            jsonSchema: [
                "type": "string",
                "pattern": "^([0-9A-Fa-f]{4}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})$",
            ],
            problem: { value in value.stringValue.map(isUUID) == true ? nil : "" }))

    /// Bytes as an even number of hexadecimal digits (`"01"`, `"0a1b"`).
    public static let hex = RPCValueType.custom(
        RPCCustomType(
            name: "hex", expectation: "a hexadecimal byte string like \"01\" (an even number of hex digits)",
            jsonSchema: ["type": "string", "pattern": "^([0-9A-Fa-f]{2})*$"],
            problem: { value in value.stringValue.flatMap(HexBytes.decode) != nil ? nil : "" }))

    static func isUUID(_ string: String) -> Bool {
        let bytes = Array(string.utf8)
        let isHex = { (byte: UInt8) in HexBytes.nibble(byte) != nil }
        if bytes.count == 4 { return bytes.allSatisfy(isHex) }
        guard bytes.count == 36 else { return false }
        for (position, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(position) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if !isHex(byte) {
                return false
            }
        }
        return true
    }
}
