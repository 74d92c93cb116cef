public import FleetRPC
import FoundationEssentials

extension FleetRPCClient {
    /// Calls `method` with `params` encoded as a JSON object, and decodes the result.
    public func call<Params: Encodable, Result: Decodable>(
        _ method: String, params: Params, as type: Result.Type = Result.self, timeout: Duration? = .seconds(30)
    ) async throws(FleetRPCClientError) -> Result {
        let value = try await call(method, params: try Self.encode(params, method: method), timeout: timeout)
        return try Self.decode(value, as: type, method: method)
    }

    /// Calls `method` without params, and decodes the result.
    public func call<Result: Decodable>(
        _ method: String, as type: Result.Type, timeout: Duration? = .seconds(30)
    ) async throws(FleetRPCClientError) -> Result {
        try Self.decode(try await call(method, params: nil, timeout: timeout), as: type, method: method)
    }

    /// `value` encoded as a JSON value.
    public static func encode(_ value: some Encodable, method: String) throws(FleetRPCClientError) -> JSONValue {
        do {
            let data = try JSONEncoder().encode(value)
            return try JSONValue(parsing: Array(data))
        } catch {
            throw .invalidParams(method: method, detail: "\(error)")
        }
    }

    /// A JSON value decoded as `type`; a mismatch is a malformed reply.
    public static func decode<Result: Decodable>(
        _ value: JSONValue, as type: Result.Type, method: String
    ) throws(FleetRPCClientError) -> Result {
        do {
            return try JSONDecoder().decode(type, from: Data(value.serialized()))
        } catch let error as DecodingError {
            throw .malformedReply(detail: "the result of \(method) is not a \(Result.self): \(describe(error))")
        } catch {
            throw .malformedReply(detail: "the result of \(method) is not a \(Result.self): \(error)")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "the top level" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "\"\(key.stringValue)\" is missing at \(path(context))"
        case .typeMismatch(_, let context): return "wrong type at \(path(context)): \(context.debugDescription)"
        case .valueNotFound(_, let context): return "a value is missing at \(path(context))"
        case .dataCorrupted(let context): return "\(context.debugDescription) at \(path(context))"
        @unknown default: return "\(error)"
        }
    }
}
