#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Every error the `Systemd` module throws. Each case reads as a complete sentence through
/// `description`; the raw `errno` is kept for callers that want to branch on it.
public enum SystemdError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `sd_notify` failed to deliver `state` to the service manager's notification socket.
    case notifyFailed(state: String, errno: Int32)
    /// `sd_watchdog_enabled` rejected `WATCHDOG_USEC` or `WATCHDOG_PID`.
    case invalidWatchdogEnvironment(errno: Int32)
    /// `sd_listen_fds` rejected `LISTEN_FDS`, `LISTEN_PID` or `LISTEN_FDNAMES`.
    case socketActivationFailed(errno: Int32)
    /// A log target string other than `auto`, `journal` or `stderr`.
    case unknownLogTarget(String)

    public var description: String {
        switch self {
        case .notifyFailed(let state, let errno):
            let first = state.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? state
            return "Could not send \"\(first)\" to the service manager (NOTIFY_SOCKET): \(Self.explain(errno))."
        case .invalidWatchdogEnvironment(let errno):
            return "The watchdog settings passed by the service manager (WATCHDOG_USEC, WATCHDOG_PID) are invalid: \(Self.explain(errno))."
        case .socketActivationFailed(let errno):
            return "Could not take over the sockets passed by the service manager (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES): \(Self.explain(errno))."
        case .unknownLogTarget(let value):
            return "Unknown log target \"\(value)\"; expected one of: auto, journal, stderr."
        }
    }

    /// `strerror` text plus the number, e.g. `Connection refused (errno 111)`.
    static func explain(_ errno: Int32) -> String {
        let text = strerror(errno).map { String(cString: $0) } ?? "unknown error"
        return "\(text) (errno \(errno))"
    }
}
