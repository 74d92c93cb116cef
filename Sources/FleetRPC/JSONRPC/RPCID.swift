/// A JSON-RPC 2.0 request id: a string, a number or null. A request without an id is a
/// notification (``RPCRequest/id`` is `nil`). Numbers keep their literal text so a reply
/// echoes the id exactly as the client sent it.
public enum RPCID: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case number(JSONNumber)
    case null

    /// An integer id.
    public static func int(_ value: Int64) -> RPCID { .number(JSONNumber(value)) }

    /// The JSON text of the id, as it is written in a frame.
    public var description: String {
        switch self {
        case .string(let value): return JSONValue.string(value).description
        case .number(let value): return value.literal
        case .null: return "null"
        }
    }

    func write(into output: inout [UInt8]) {
        switch self {
        case .string(let value): JSONValue.writeString(value, into: &output)
        case .number(let value): output.append(contentsOf: value.literal.utf8)
        case .null: output.append(contentsOf: "null".utf8)
        }
    }
}

extension RPCID: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(JSONNumber.self) {
            self = .number(value)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "A JSON-RPC id must be a string, a number or null.")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}
