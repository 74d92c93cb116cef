/// The `params` of a request: by name (an object) or by position (an array).
public enum RPCParams: Sendable, Hashable {
    case byName([String: JSONValue])
    case byPosition([JSONValue])

    /// The params as a JSON value.
    public var jsonValue: JSONValue {
        switch self {
        case .byName(let members): return .object(members)
        case .byPosition(let elements): return .array(elements)
        }
    }
}

extension RPCParams: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        switch try container.decode(JSONValue.self) {
        case .object(let members): self = .byName(members)
        case .array(let elements): self = .byPosition(elements)
        default:
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "JSON-RPC params must be an object or an array.")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(jsonValue)
    }
}
