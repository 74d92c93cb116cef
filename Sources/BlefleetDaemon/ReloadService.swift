import FleetCore
import Logging
import ServiceLifecycle
import Systemd
import UnixSignals

/// SIGHUP: reads the configuration file again. The settings that can change while running
/// take effect (`default-timeout-ms`, `temperature-max-age-ms`, `auto-adopt`, `allow`, the
/// board profiles of `profile-dir` (each board takes its new profile at its next connect), and
/// `log-level` when the loggers follow a ``LogLevelSetting``); any other change is logged
/// as needing a restart. A bad file changes nothing.
struct ReloadService: Service {
    let fleet: Fleet
    let running: DaemonConfiguration
    let reread: @Sendable () throws -> DaemonConfiguration
    let logLevel: LogLevelSetting?
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            _ = try? notifier.reloading()
            do {
                let next = try reread()
                try await fleet.reconfigure(next.fleetTunables())
                var needRestart = Self.restartOnlyChanges(from: running, to: next)
                if let logLevel, let level = Logger.Level(rawValue: next.logLevel) {
                    if level != logLevel.level {
                        logLevel.level = level
                        logger.notice("log level is now \(level)")
                    }
                } else if next.logLevel != running.logLevel {
                    needRestart.append("log-level")
                }
                if needRestart.isEmpty {
                    logger.notice("configuration reloaded")
                } else {
                    logger.warning(
                        "configuration reloaded; these settings take effect at the next restart: \(needRestart.joined(separator: ", "))")
                }
            } catch {
                logger.error("configuration not reloaded, keeping the running one: \(error)")
            }
            _ = try? notifier.ready()
        }
    }

    static func restartOnlyChanges(from old: DaemonConfiguration, to new: DaemonConfiguration) -> [String] {
        var changed: [String] = []
        if old.socketPath != new.socketPath { changed.append("socket") }
        if old.controlGroup != new.controlGroup { changed.append("socket-group") }
        if old.readOnlyGroup != new.readOnlyGroup { changed.append("read-only-group") }
        if old.stateDirectory != new.stateDirectory { changed.append("state-dir") }
        if old.adapter != new.adapter { changed.append("adapter") }
        if old.bus != new.bus { changed.append("bus") }
        if old.logTarget != new.logTarget { changed.append("log-target") }
        if old.connectionLimit != new.connectionLimit || old.adapterConnectionLimits != new.adapterConnectionLimits {
            changed.append("connection-limit")
        }
        if old.reservedFleetSlots != new.reservedFleetSlots { changed.append("reserved-fleet-slots") }
        if old.leasesPerUser != new.leasesPerUser { changed.append("leases-per-user") }
        if old.subscriptionsPerConnection != new.subscriptionsPerConnection { changed.append("subscriptions-per-connection") }
        if old.connectTimeoutMilliseconds != new.connectTimeoutMilliseconds { changed.append("connect-timeout-ms") }
        if old.temperatureRefreshSeconds != new.temperatureRefreshSeconds { changed.append("temperature-refresh-s") }
        if old.maxFrameBytes != new.maxFrameBytes { changed.append("max-frame-bytes") }
        if old.maxCallsPerClient != new.maxCallsPerClient { changed.append("max-calls-per-client") }
        if old.maxConnectionsPerUser != new.maxConnectionsPerUser { changed.append("max-connections-per-user") }
        if old.maxConnections != new.maxConnections { changed.append("max-connections") }
        if old.idleTimeoutSeconds != new.idleTimeoutSeconds { changed.append("idle-timeout-s") }
        if old.maxBatchCalls != new.maxBatchCalls { changed.append("max-batch-calls") }
        if old.maxCallsPerUser != new.maxCallsPerUser { changed.append("max-calls-per-user") }
        if old.maxCallsInFlight != new.maxCallsInFlight { changed.append("max-calls-in-flight") }
        if old.reservedControlCalls != new.reservedControlCalls { changed.append("reserved-control-calls") }
        if old.mqtt != new.mqtt { changed.append("mqtt") }
        if old.history != new.history { changed.append("history") }
        if old.maxQueuedNotifications != new.maxQueuedNotifications { changed.append("max-queued-notifications") }
        return changed
    }
}
