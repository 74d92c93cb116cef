/// A JSON-RPC 2.0 request, or a notification when ``id`` is `nil`.
public struct RPCRequest: Sendable, Hashable {
    /// The method to call, e.g. `"led.set"`.
    public var method: String
    /// The parameters; `nil` when the member is absent.
    public var params: RPCParams?
    /// The id; `nil` for a notification (no reply is sent), `.null` for an explicit null id.
    public var id: RPCID?

    public init(method: String, params: RPCParams? = nil, id: RPCID?) {
        self.method = method
        self.params = params
        self.id = id
    }

    /// Whether this is a notification, which gets no reply.
    public var isNotification: Bool { id == nil }

    /// Out-of-band information about the call, as MCP carries it: `_meta` in named params (no
    /// method has a parameter of that name). blefleet-web puts the name of its web user there
    /// (`user`), which the daemon logs with the call and which grants nothing.
    public var meta: [String: JSONValue]? {
        guard case .byName(let members)? = params else { return nil }
        return members["_meta"]?.objectValue
    }

    /// The request as one compact JSON text (no trailing newline).
    public func serialized() -> [UInt8] {
        (try? JSONCodec.encode(self)) ?? []
    }
}

extension RPCRequest: Codable {
    private enum CodingKeys: String, CodingKey {
        case jsonrpc, method, params, id
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decode(String.self, forKey: .jsonrpc)
        guard version == "2.0" else {
            throw DecodingError.dataCorruptedError(
                forKey: .jsonrpc, in: container, debugDescription: "\"jsonrpc\" must be \"2.0\".")
        }
        method = try container.decode(String.self, forKey: .method)
        params = try container.decodeIfPresent(RPCParams.self, forKey: .params)
        if container.contains(.id) {
            id = try container.decode(RPCID.self, forKey: .id)
        } else {
            id = nil
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("2.0", forKey: .jsonrpc)
        try container.encode(method, forKey: .method)
        try container.encodeIfPresent(params, forKey: .params)
        if let id { try container.encode(id, forKey: .id) }
    }
}
