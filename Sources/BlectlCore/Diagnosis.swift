import FleetRPC
import JSONRPC
public import FleetRPCClient

#if canImport(Glibc)
import Glibc
#endif

/// What blectl tells the user when a call fails: the message, hints, and the exit status.
public struct Diagnosis: Sendable, Hashable {
    public var status: ExitStatus
    /// One sentence saying what went wrong.
    public var message: String
    /// What the user can do about it, one line each.
    public var hints: [String]

    public init(status: ExitStatus, message: String, hints: [String] = []) {
        self.status = status
        self.message = message
        self.hints = hints
    }

    /// The lines printed to standard error, prefixed with `blectl: ` / `hint: `.
    public var lines: [String] {
        ["blectl: \(message)"] + hints.map { "hint: \($0)" }
    }

    static let groupHints = [
        "Join the blefleet group: sudo usermod -aG blefleet $USER, then log in again.",
    ]

    static func daemonHints(_ path: String) -> [String] {
        [
            "Is blefleetd running? Check with: systemctl status blefleetd",
            "To use another socket than \(path), pass --socket PATH or set BLEFLEET_SOCKET.",
        ]
    }

    /// The diagnosis of a client error.
    public init(_ error: FleetRPCClientError) {
        switch error {
        case .daemonUnreachable(let path, let code) where code == EACCES || code == EPERM:
            self.init(
                status: .noPermission,
                message: "Permission denied opening blefleetd's socket \(path).",
                hints: Self.groupHints)
        case .daemonUnreachable(let path, _):
            self.init(status: .unavailable, message: error.description, hints: Self.daemonHints(path))
        case .permissionDenied(let method, let message):
            self.init(
                status: .noPermission, message: "Permission denied: blefleetd does not let this user call \(method). \(message)",
                hints: Self.groupHints)
        case .rpcError(_, let code, _, _) where code == RPCErrorCode.invalidParams.rawValue:
            self.init(status: .usage, message: error.description)
        case .rpcError(_, let code, _, _) where code == RPCErrorCode.shuttingDown.rawValue:
            self.init(status: .unavailable, message: error.description, hints: ["Try again once blefleetd has restarted."])
        case .rpcError:
            self.init(status: .failed, message: error.description)
        case .timeout:
            self.init(status: .failed, message: error.description, hints: ["Allow more time with --timeout SECONDS."])
        case .connectionClosed:
            self.init(
                status: .unavailable, message: error.description,
                hints: ["blefleetd may have stopped; check with: systemctl status blefleetd"])
        case .malformedReply, .invalidParams, .cancelled:
            self.init(status: .failed, message: error.description)
        }
    }
}
