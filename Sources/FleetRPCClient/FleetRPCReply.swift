import FleetRPC
public import JSONRPC

/// A successful reply as the daemon sent it: its result is read once, with the type the
/// caller wants (no intermediate JSON value), or as JSON for printing it as it came.
public struct FleetRPCReply<Result: Decodable>: Sendable {
    /// The method called.
    public let method: String
    /// The reply's JSON text.
    public let frame: [UInt8]

    /// The result, typed; a mismatch is a malformed reply.
    public func result() throws(FleetRPCClientError) -> Result {
        try read(Result.self)
    }

    /// The result as it came, for printing.
    public func json() throws(FleetRPCClientError) -> JSONValue {
        try read(JSONValue.self)
    }

    private func read<Value: Decodable>(_ type: Value.Type) throws(FleetRPCClientError) -> Value {
        let response: RPCTypedResponse<Value>
        do {
            response = try JSONCodec.decode(RPCTypedResponse<Value>.self, from: frame)
        } catch {
            throw .malformedReply(detail: "the result of \(method) is not a \(Value.self): \(JSONCodec.describe(error))")
        }
        switch response.outcome {
        case .success(let value): return value
        case .failure(let error): throw ClientCore.map(error, method: method)
        }
    }
}

/// A notification the daemon sent (e.g. `events.event`): its params are read with the type
/// the listener expects.
public struct FleetRPCNotification: Sendable {
    /// The notification's method, e.g. `"events.event"`.
    public let method: String
    /// The notification's JSON text.
    public let frame: [UInt8]

    /// The params read as `type`; `nil` when they are not of that shape.
    public func params<Params: Decodable>(as type: Params.Type) -> Params? {
        try? JSONCodec.decode(RPCTypedNotification<Params>.self, from: frame).params
    }
}
