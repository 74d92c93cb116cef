/// A request or notification with typed params, written straight to JSON text (no
/// intermediate ``JSONValue``): what a client sends, and the notifications a server sends.
public struct RPCOutgoing<Params: Encodable>: Encodable {
    public var method: String
    public var params: Params?
    /// `nil` for a notification.
    public var id: RPCID?

    public init(method: String, params: Params?, id: RPCID?) {
        self.method = method
        self.params = params
        self.id = id
    }

    private enum CodingKeys: String, CodingKey {
        case jsonrpc, method, params, id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("2.0", forKey: .jsonrpc)
        try container.encode(method, forKey: .method)
        try container.encodeIfPresent(params, forKey: .params)
        try container.encodeIfPresent(id, forKey: .id)
    }
}

/// A reply read with a typed result: the envelope and the result in one decoding pass.
public struct RPCTypedResponse<Result: Decodable>: Decodable {
    public var id: RPCID
    /// The result, or the error the server answered with.
    public var outcome: Swift.Result<Result, RPCError>

    private enum CodingKeys: String, CodingKey {
        case jsonrpc, result, error, id
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(RPCID.self, forKey: .id)
        if container.contains(.error) {
            outcome = .failure(try container.decode(RPCError.self, forKey: .error))
        } else {
            outcome = .success(try container.decode(Result.self, forKey: .result))
        }
    }
}

/// A notification read with typed params.
public struct RPCTypedNotification<Params: Decodable>: Decodable {
    public var method: String
    public var params: Params
}
