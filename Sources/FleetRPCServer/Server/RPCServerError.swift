import Glibc

/// Why the server could not start (or serve).
public struct RPCServerError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }

    static func groupNotFound(_ name: String) -> RPCServerError {
        RPCServerError(
            "The socket group '\(name)' does not exist; create it (groupadd \(name)) or configure another group.")
    }

    static func system(_ what: String, path: String, errno code: Int32) -> RPCServerError {
        RPCServerError("Cannot \(what) \(path): \(String(cString: strerror(code))).")
    }

    static let noSocketOptions = RPCServerError("The connection has no socket options.")

    static let alreadyServing = RPCServerError("The server's socket is already being served by another run().")

    static let stillBinding = RPCServerError(
        "The server's socket is still being created by bind(); wait for bind() to return before run().")

    static let notBound = RPCServerError("The server has no socket: bind() did not succeed.")

    static let stopped = RPCServerError("The server has run and stopped; a server runs once, make a new one to serve again.")
}
