import FleetRPC
public import JSONRPC

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything that can go wrong talking to `blefleetd`, each case a clear sentence.
public enum FleetRPCClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The socket could not be connected: `errno` is the system's reason (`ENOENT`: no such
    /// socket, `ECONNREFUSED`: nobody listens, `EACCES`: no permission to open it…).
    case daemonUnreachable(socketPath: String, errno: Int32)
    /// The daemon refused the call because the user may not make it (JSON-RPC `-32000`).
    case permissionDenied(method: String, message: String)
    /// The daemon answered the call with a JSON-RPC error.
    case rpcError(method: String, code: Int, message: String, data: JSONValue?)
    /// No reply came within the time limit.
    case timeout(method: String, seconds: Double)
    /// The connection ended (the daemon closed it or stopped) before the reply came.
    case connectionClosed(method: String?)
    /// The daemon sent something that is not a JSON-RPC reply, or a result of the wrong shape.
    case malformedReply(detail: String)
    /// The params could not be encoded as JSON.
    case invalidParams(method: String, detail: String)
    /// The task waiting for the reply was cancelled.
    case cancelled(method: String)

    /// The JSON-RPC error code, when the daemon answered with one.
    public var rpcCode: Int? {
        switch self {
        case .permissionDenied: return RPCErrorCode.permissionDenied.rawValue
        case .rpcError(_, let code, _, _): return code
        default: return nil
        }
    }

    /// Why the socket could not be reached, in words.
    public static func reason(forErrno code: Int32) -> String {
        switch code {
        case ENOENT: return "the socket does not exist"
        case ECONNREFUSED: return "nothing is listening on it"
        case EACCES, EPERM: return "permission to open it was denied"
        case ENOTDIR: return "a part of the path is not a directory"
        case ENAMETOOLONG: return "the path is too long for a Unix socket"
        case ENOTSOCK: return "the path is not a socket"
        case EAGAIN: return "the daemon's backlog is full"
        default: return String(cString: strerror(code)).lowercased()
        }
    }

    public var description: String {
        switch self {
        case .daemonUnreachable(let path, let code):
            return "Cannot connect to blefleetd at \(path): \(Self.reason(forErrno: code))."
        case .permissionDenied(let method, let message):
            return "Permission denied for \(method): \(message)"
        case .rpcError(let method, let code, let message, _):
            return "\(method) failed: \(message) (JSON-RPC error \(code))"
        case .timeout(let method, let seconds):
            return "No reply to \(method) from blefleetd within \(Self.seconds(seconds))."
        case .connectionClosed(let method?):
            return "blefleetd closed the connection before replying to \(method)."
        case .connectionClosed(nil):
            return "blefleetd closed the connection."
        case .malformedReply(let detail):
            return "blefleetd sent a malformed reply: \(detail)."
        case .invalidParams(let method, let detail):
            return "The params of \(method) cannot be sent: \(detail)."
        case .cancelled(let method):
            return "The call to \(method) was cancelled."
        }
    }

    static func seconds(_ value: Double) -> String {
        if value == value.rounded() && value < 1e9 { return "\(Int(value)) s" }
        return "\(value) s"
    }
}
