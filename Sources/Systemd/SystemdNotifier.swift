import CSystemd

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Tells the service manager about the daemon's state through `sd_notify(3)`.
///
/// Every call returns `true` when the message was sent and `false` when the process is not
/// supervised (`NOTIFY_SOCKET` unset), so a daemon can call these unconditionally. Failures to
/// send throw ``SystemdError/notifyFailed(state:errno:)``.
///
/// `sd_notify` reads `NOTIFY_SOCKET` from the process environment on every call; this type
/// keeps no state and is freely shareable.
public struct SystemdNotifier: Sendable {
    /// Passed to `sd_notify`: when `true`, `NOTIFY_SOCKET` is removed from the environment
    /// after the first message, so child processes do not inherit it (and later messages are
    /// not sent).
    public let unsetEnvironment: Bool

    public init(unsetEnvironment: Bool = false) {
        self.unsetEnvironment = unsetEnvironment
    }

    /// `READY=1`: start-up is complete and clients can be served.
    @discardableResult
    public func ready() throws -> Bool {
        try send("READY=1")
    }

    /// `STATUS=…`: a one-line human-readable status shown by `systemctl status`.
    /// Line breaks in `text` are replaced by spaces so they cannot inject other assignments.
    @discardableResult
    public func status(_ text: String) throws -> Bool {
        let oneLine = String(text.map { $0.isNewline ? " " : $0 })
        return try send("STATUS=\(oneLine)")
    }

    /// `WATCHDOG=1`: keeps the service manager's watchdog from firing.
    @discardableResult
    public func watchdog() throws -> Bool {
        try send("WATCHDOG=1")
    }

    /// `STOPPING=1`: shutdown has begun.
    @discardableResult
    public func stopping() throws -> Bool {
        try send("STOPPING=1")
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (required by `Type=notify-reload`, harmless
    /// before systemd 253): configuration is being reloaded. Send ``ready()`` when done.
    @discardableResult
    public func reloading() throws -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let usec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        return try send("RELOADING=1\nMONOTONIC_USEC=\(usec)")
    }

    /// Sends raw newline-separated `KEY=value` assignments (see `sd_notify(3)`), for the
    /// states that have no typed call.
    @discardableResult
    public func send(_ state: String) throws -> Bool {
        let result = sd_notify(unsetEnvironment ? 1 : 0, state)
        if result < 0 {
            throw SystemdError.notifyFailed(state: state, errno: -result)
        }
        return result > 0
    }
}
