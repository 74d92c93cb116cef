/// A JSON-RPC 2.0 error object. Throw it from a method handler to answer with it.
public struct RPCError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The numeric code; see ``RPCErrorCode``.
    public var code: Int
    /// One sentence for a person.
    public var message: String
    /// Extra structured detail, if any.
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public init(_ code: RPCErrorCode, _ message: String, data: JSONValue? = nil) {
        self.init(code: code.rawValue, message: message, data: data)
    }

    public var description: String { "\(message) (JSON-RPC error \(code))" }

    public static func parseError(_ detail: String) -> RPCError {
        RPCError(.parseError, "Parse error: \(detail).")
    }

    public static func invalidRequest(_ detail: String) -> RPCError {
        RPCError(.invalidRequest, "Invalid request: \(detail).")
    }

    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(.methodNotFound, "Method not found: \(JSONValue.string(method)). Call rpc.discover for the list.")
    }

    public static func invalidParams(_ detail: String) -> RPCError {
        RPCError(.invalidParams, "Invalid params: \(detail).")
    }

    /// An internal error that says nothing about its cause (which goes to the server's log).
    public static let internalError = RPCError(.internalError, "Internal error; the daemon's log has the details.")
}

extension RPCError: Codable {
    private enum CodingKeys: String, CodingKey {
        case code, message, data
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decode(Int.self, forKey: .code)
        message = try container.decode(String.self, forKey: .message)
        data = try container.decodeIfPresent(JSONValue.self, forKey: .data)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(message, forKey: .message)
        try container.encodeIfPresent(data, forKey: .data)
    }
}
