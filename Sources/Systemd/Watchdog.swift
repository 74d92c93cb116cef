import CSystemd

/// The service manager's watchdog (`WatchdogSec=`), as reported by `sd_watchdog_enabled(3)`.
public struct Watchdog: Sendable, Equatable {
    /// How long the service manager waits for a `WATCHDOG=1` before it acts (`WATCHDOG_USEC`).
    public let timeout: Duration

    /// How often to ping: half of ``timeout``, as `sd_watchdog_enabled(3)` recommends.
    public var pingInterval: Duration { timeout / 2 }

    public init(timeout: Duration) {
        self.timeout = timeout
    }

    /// The watchdog this process must serve, or `nil` when none is enabled (`WATCHDOG_USEC`
    /// unset, or `WATCHDOG_PID` names another process).
    ///
    /// `sd_watchdog_enabled` is called once per process; later calls return the cached answer,
    /// so the result stays stable even if the environment changes.
    public static func fromEnvironment() throws -> Watchdog? {
        try cached.get()
    }

    private static let cached: Result<Watchdog?, SystemdError> = {
        var usec: UInt64 = 0
        let result = sd_watchdog_enabled(0, &usec)
        if result < 0 {
            return .failure(.invalidWatchdogEnvironment(errno: -result))
        }
        guard result > 0, usec > 0 else { return .success(nil) }
        return .success(Watchdog(timeout: .microseconds(Int64(clamping: usec))))
    }()
}
