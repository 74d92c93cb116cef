/// A JSON-RPC 2.0 request id: a string, an integer or null. A request without an id is a
/// notification (``RPCRequest/id`` is `nil`). Other numbers (`1.5`, integers beyond 64 bits)
/// are refused with `-32600`: the reply carries the same value back, which an integer id
/// always allows.
public enum RPCID: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case int(Int64)
    case null

    /// The JSON text of the id, as it is written in a frame.
    public var description: String {
        switch self {
        case .string(let value): return JSONValue.string(value).description
        case .int(let value): return String(value)
        case .null: return "null"
        }
    }
}

extension RPCID: Codable {
    public init(from decoder: any Decoder) throws {
        // Integers first: the ids clients send are mostly integers, and a failed attempt costs.
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "A JSON-RPC id must be a string, an integer or null.")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}
