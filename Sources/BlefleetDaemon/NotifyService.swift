import FleetCore
import Logging
import ServiceLifecycle
import Systemd

/// Tells systemd how the daemon is: `READY=1` once the socket accepts calls (it is bound
/// before this runs) and the BlueZ mirror is loaded (or BlueZ is known to be absent),
/// `STATUS=` whenever the summary changes, `STOPPING=1` when shutdown begins.
struct NotifyService: Service {
    let fleet: Fleet
    let notifier: SystemdNotifier
    let logger: Logger
    /// How long to wait for BlueZ before declaring readiness without it.
    var bluezGrace: Duration = .seconds(5)

    func run() async throws {
        // Temperatures and LED writes (the steady traffic of a connected fleet) never
        // change the summary; only board, adapter and dropped-event deliveries can.
        let events = fleet.events.subscribe(bufferSize: 64) { event in
            switch event {
            case .temperature, .sensor, .ledApplied: false
            default: true
            }
        }
        if !(await fleet.waitUntilLoaded(timeout: bluezGrace)) {
            logger.warning("BlueZ (org.bluez) is not on the bus; serving anyway and waiting for it")
        }
        var summary = fleet.status.summary
        send { try notifier.status(summary) }
        send { try notifier.ready() }
        logger.info("ready", metadata: ["status": "\(summary)"])
        for await _ in events.cancelOnGracefulShutdown() {
            let now = fleet.status.summary
            if now != summary {
                summary = now
                send { try notifier.status(summary) }
            }
        }
        send { try notifier.stopping() }
        send { try notifier.status("stopping") }
    }

    private func send(_ body: () throws -> Bool) {
        do {
            _ = try body()
        } catch {
            logger.warning("sd_notify failed: \(error)")
        }
    }
}
