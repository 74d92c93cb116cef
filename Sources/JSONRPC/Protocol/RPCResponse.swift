/// A JSON-RPC 2.0 response: a result or an error (never both), with the request's id.
public struct RPCResponse: Sendable, Hashable {
    /// What the call produced.
    public enum Outcome: Sendable, Hashable {
        case result(JSONValue)
        case error(RPCError)
    }

    /// The id of the request answered; `.null` when it could not be read (parse errors).
    public var id: RPCID
    public var outcome: Outcome

    public init(id: RPCID, outcome: Outcome) {
        self.id = id
        self.outcome = outcome
    }

    public init(id: RPCID, result: JSONValue) {
        self.init(id: id, outcome: .result(result))
    }

    public init(id: RPCID, error: RPCError) {
        self.init(id: id, outcome: .error(error))
    }

    /// The result, if the call succeeded.
    public var result: JSONValue? {
        if case .result(let value) = outcome { return value }
        return nil
    }

    /// The error, if the call failed.
    public var error: RPCError? {
        if case .error(let value) = outcome { return value }
        return nil
    }

    /// The response as one compact JSON text (no trailing newline).
    public func serialized() -> [UInt8] {
        (try? JSONCodec.encode(self)) ?? []
    }
}

extension RPCResponse: Codable {
    private enum CodingKeys: String, CodingKey {
        case jsonrpc, result, error, id
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard try container.decode(String.self, forKey: .jsonrpc) == "2.0" else {
            throw DecodingError.dataCorruptedError(
                forKey: .jsonrpc, in: container, debugDescription: "\"jsonrpc\" must be \"2.0\".")
        }
        id = try container.decode(RPCID.self, forKey: .id)
        switch (container.contains(.result), container.contains(.error)) {
        case (true, false):
            outcome = .result(try container.decode(JSONValue.self, forKey: .result))
        case (false, true):
            outcome = .error(try container.decode(RPCError.self, forKey: .error))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .result, in: container,
                debugDescription: "A JSON-RPC response has either \"result\" or \"error\", not both or neither.")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch outcome {
        case .result(let value): try RPCReply(id: id, outcome: .result(value)).encode(to: encoder)
        case .error(let error): try RPCReply(id: id, outcome: .error(error)).encode(to: encoder)
        }
    }
}

/// A reply as a server writes it: the handler's result encoded as it is (no intermediate
/// ``JSONValue``), or an error, under the request's id.
public struct RPCReply: Encodable, Sendable {
    public enum Outcome: Sendable {
        case result(any Encodable & Sendable)
        case error(RPCError)
    }

    public let id: RPCID
    public let outcome: Outcome

    public init(id: RPCID, outcome: Outcome) {
        self.id = id
        self.outcome = outcome
    }

    private enum CodingKeys: String, CodingKey {
        case jsonrpc, result, error, id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("2.0", forKey: .jsonrpc)
        switch outcome {
        case .result(let value): try container.encode(value, forKey: .result)
        case .error(let error): try container.encode(error, forKey: .error)
        }
        try container.encode(id, forKey: .id)
    }
}
