public import JSONRPC

/// The parameter types of blefleet's methods that are strings (or lists) of a shape of
/// their own. The dispatcher reads each once, into the fleet's own type (a ``Selection``,
/// a ``BoardAddress``, bytes), before a handler runs; nothing reads them again.
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
            parse: { value throws(RPCCustomType.Problem) in try Selection(json: value) }))

    /// A Bluetooth address, `AA:BB:CC:DD:EE:FF`.
    public static let address = text(
        "address", "a Bluetooth address like \"AA:BB:CC:DD:EE:FF\"", pattern: "^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$",
        BoardAddress.init)

    /// A UUID, 128-bit form (`0000180f-0000-1000-8000-00805f9b34fb`) or 16-bit (`180f`).
    public static let uuid = text(
        "uuid", "a UUID like \"d888a9c3-f3cc-11ed-a05b-0242ac120003\" or a 16-bit one like \"180f\"",
        pattern: "^([0-9A-Fa-f]{4}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})$"
    ) { isUUID($0) ? $0 : nil }

    /// Bytes as an even number of hexadecimal digits (`"01"`, `"0a1b"`).
    public static let hex = text(
        "hex", "a hexadecimal byte string like \"01\" (an even number of hex digits)", pattern: "^([0-9A-Fa-f]{2})*$",
        HexBytes.decode)

    /// A string of a shape `pattern` says, read into the fleet's type by `read` (nil: not of it).
    static func text(
        _ name: String, _ expectation: String, pattern: String, _ read: @escaping @Sendable (String) -> (any Sendable)?
    ) -> RPCValueType {
        .custom(
            RPCCustomType(
                name: name, expectation: expectation, jsonSchema: ["type": "string", "pattern": .string(pattern)],
                parse: { value throws(RPCCustomType.Problem) in
                    guard let read = value.stringValue.flatMap(read) else { throw RPCCustomType.Problem() }
                    return read
                }))
    }

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

extension Selection {
    /// A selection as JSON gives it: one string or a non-empty list of strings, each a
    /// selector; says clearly what is wrong with any other shape.
    init(json value: JSONValue) throws(RPCCustomType.Problem) {
        let texts: [String]
        switch value {
        case .string(let text):
            texts = [text]
        case .array(let elements):
            guard !elements.isEmpty else { throw RPCCustomType.Problem("an empty list selects no board") }
            var strings: [String] = []
            for element in elements {
                guard case .string(let text) = element else {
                    throw RPCCustomType.Problem(
                        "every element of the list must be a string, found \(element.kindDescription)")
                }
                strings.append(text)
            }
            texts = strings
        default:
            throw RPCCustomType.Problem(
                "a selection is \"all\", a board address, name, alias or glob, or a list of those; found \(value.kindDescription)")
        }
        do {
            try self.init(parsing: texts)
        } catch {
            throw RPCCustomType.Problem(error.message)
        }
    }
}

extension RPCCheckedParams {
    /// The selection named `name` (read once, as `.selection`, by the descriptor).
    public func selection(_ name: String) throws(RPCError) -> Selection {
        guard let selection = try optionalSelection(name) else { throw .invalidParams("missing required parameter \"\(name)\"") }
        return selection
    }

    /// The selection named `name`, if given.
    public func optionalSelection(_ name: String) throws(RPCError) -> Selection? {
        try typed(name, as: Selection.self)
    }

    /// The address named `name` (read once, as `.address`, by the descriptor).
    public func address(_ name: String) throws(RPCError) -> BoardAddress {
        guard let address = try typed(name, as: BoardAddress.self) else { throw .invalidParams("missing required parameter \"\(name)\"") }
        return address
    }
}

extension Selection {
    /// The boards of a call that takes a selection or one address (exactly one of them).
    static func boards(_ select: Selection?, _ address: BoardAddress?) -> Selection {
        select ?? Selection(address.map { [.address($0)] } ?? [])
    }
}
