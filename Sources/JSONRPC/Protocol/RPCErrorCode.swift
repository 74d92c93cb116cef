/// An error code a server answers with: JSON-RPC 2.0's own five here; a server adds its own
/// in the range the specification reserves for servers (-32000…-32099) as static members.
public struct RPCErrorCode: Sendable, Hashable, CustomStringConvertible {
    /// The number on the wire.
    public let rawValue: Int
    /// The name, as documentation and OpenRPC write it (`"parseError"`).
    public let name: String
    /// One line saying what the code means.
    public let meaning: String

    public init(_ rawValue: Int, name: String, meaning: String) {
        self.rawValue = rawValue
        self.name = name
        self.meaning = meaning
    }

    public var description: String { name }

    /// The frame is not valid JSON (or is nested too deeply, or has malformed UTF-8).
    public static let parseError = RPCErrorCode(-32700, name: "parseError", meaning: "The frame is not valid JSON.")
    /// The JSON is not a valid JSON-RPC 2.0 request object.
    public static let invalidRequest = RPCErrorCode(
        -32600, name: "invalidRequest", meaning: "The JSON is not a valid JSON-RPC 2.0 request.")
    /// No method of that name.
    public static let methodNotFound = RPCErrorCode(-32601, name: "methodNotFound", meaning: "No method of that name.")
    /// A parameter is missing, unknown, or of the wrong type or range.
    public static let invalidParams = RPCErrorCode(
        -32602, name: "invalidParams", meaning: "A parameter is missing, unknown, or of the wrong type or range.")
    /// The server failed unexpectedly; details are in its log, not in the reply.
    public static let internalError = RPCErrorCode(
        -32603, name: "internalError", meaning: "The daemon failed unexpectedly; details are in its log.")

    /// JSON-RPC 2.0's own codes.
    public static let specified: [RPCErrorCode] = [parseError, invalidRequest, methodNotFound, invalidParams, internalError]
}
