public import Logging
public import ServiceLifecycle

/// Pings the service manager's watchdog (`WATCHDOG=1`) at ``Watchdog/pingInterval`` until
/// cancelled or until graceful shutdown reaches it.
///
/// Put it **first** in the `ServiceGroup` so it is shut down last and keeps pinging while the
/// other services wind down. With no watchdog (`nil`) it sends nothing and simply waits for
/// shutdown, so it can always be part of the group.
///
/// When `isHealthy` returns `false` the ping is skipped, so a daemon that is wedged (for
/// example its D-Bus thread stopped answering) gets restarted by the service manager.
public struct WatchdogService<C: Clock>: Service where C.Duration == Duration {
    public let watchdog: Watchdog?
    private let clock: C
    private let notifier: SystemdNotifier
    private let logger: Logger
    private let isHealthy: (@Sendable () async -> Bool)?

    /// - Parameters:
    ///   - watchdog: usually `try Watchdog.fromEnvironment()`; `nil` disables pinging.
    ///   - clock: the clock that paces the pings.
    ///   - notifier: sends `WATCHDOG=1`.
    ///   - logger: reports skipped and failed pings.
    ///   - isHealthy: asked before every ping; `false` skips that ping.
    public init(
        watchdog: Watchdog?,
        clock: C,
        notifier: SystemdNotifier = SystemdNotifier(),
        logger: Logger,
        isHealthy: (@Sendable () async -> Bool)? = nil
    ) {
        self.watchdog = watchdog
        self.clock = clock
        self.notifier = notifier
        self.logger = logger
        self.isHealthy = isHealthy
    }

    public func run() async throws {
        guard let watchdog else {
            logger.debug("Watchdog not enabled by the service manager; not pinging.")
            // Stay in the group until shutdown: a service that returns early ends a ServiceGroup.
            try? await gracefulShutdown()
            return
        }
        logger.debug(
            "Pinging the watchdog.",
            metadata: [
                "watchdog.timeout": "\(watchdog.timeout)",
                "watchdog.interval": "\(watchdog.pingInterval)",
            ])
        do {
            try await cancelWhenGracefulShutdown {
                try await pingLoop(interval: watchdog.pingInterval)
            }
        } catch is CancellationError {
            // Cancellation is the normal way to stop.
        }
    }

    private func pingLoop(interval: Duration) async throws {
        var state = PingState()
        var deadline = clock.now
        while !Task.isCancelled {
            let healthy = await isHealthy?() ?? true
            if healthy {
                do {
                    try notifier.watchdog()
                    state.pinged(logger: logger)
                } catch {
                    state.failed(error, logger: logger)
                }
            } else {
                state.skipped(logger: logger)
            }
            // Fixed-rate schedule; after a stall, restart from now instead of bursting.
            deadline = deadline.advanced(by: interval)
            let now = clock.now
            if deadline < now { deadline = now.advanced(by: interval) }
            try await clock.sleep(until: deadline, tolerance: nil)
        }
    }
}

extension WatchdogService where C == ContinuousClock {
    /// A watchdog service paced by `ContinuousClock`.
    public init(
        watchdog: Watchdog?,
        notifier: SystemdNotifier = SystemdNotifier(),
        logger: Logger,
        isHealthy: (@Sendable () async -> Bool)? = nil
    ) {
        self.init(
            watchdog: watchdog, clock: ContinuousClock(), notifier: notifier, logger: logger,
            isHealthy: isHealthy)
    }
}

/// Logs transitions only, so a long unhealthy or failing stretch produces one line, not one
/// per interval.
private struct PingState {
    private enum Last { case pinged, skipped, failed }
    private var last = Last.pinged

    mutating func pinged(logger: Logger) {
        if last != .pinged { logger.notice("Watchdog pings resumed.") }
        last = .pinged
    }

    mutating func skipped(logger: Logger) {
        if last != .skipped { logger.warning("Health check failed; not pinging the watchdog.") }
        last = .skipped
    }

    mutating func failed(_ error: any Error, logger: Logger) {
        if last != .failed { logger.error("Watchdog ping failed.", metadata: ["error": "\(error)"]) }
        last = .failed
    }
}
