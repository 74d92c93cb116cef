/// Why the server could not start.
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
}

import Glibc
