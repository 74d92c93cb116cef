import FleetCore
import FleetHistory
import FleetRPC
import Foundation
import Logging
import ServiceLifecycle

/// Keeps every sensor reading of the fleet (``HistoryStore``): takes them from the fleet's
/// events as they come, writes them every ``flushInterval`` in one transaction (a
/// `history.read` writes what is queued first, so it never misses a reading), and once every
/// ``maintenanceInterval`` drops what is past its age and keeps the file under its cap (or,
/// the history being off, tries the file again). On shutdown what is queued is written and
/// the file closed.
struct HistoryService: Service {
    let store: HistoryStore
    let fleet: Fleet
    let logger: Logger
    /// One transaction per interval: 20 boards notifying every second cost the idle daemon a
    /// third of its CPU with one a second (Benchmarks/fleet/run measures it).
    var flushInterval: Duration = .seconds(5)
    var maintenanceInterval: Duration = .seconds(600)

    func run() async throws {
        // A generous buffer: 100 boards notifying every second fill it in 80 s, and it is
        // drained at once into the store's queue.
        let readings = fleet.events.subscribe(bufferSize: 8192) { event in
            switch event {
            case .temperature, .sensor: true
            default: false
            }
        }
        await store.maintain()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await delivery in readings.cancelOnGracefulShutdown() {
                    switch delivery {
                    case .event(.temperature(let address, let celsius)):
                        store.record(address, sensor: BoardProfile.temperatureSensor, value: Double(celsius.degrees))
                    case .event(.sensor(let address, let name, let value, _)):
                        store.record(address, sensor: name, value: value)
                    case .dropped(let count):
                        store.countDropped(count)
                        logger.warning("history fell behind the fleet; readings lost", metadata: ["history.lost": "\(count)"])
                    case .event:
                        break
                    }
                }
            }
            group.addTask {
                // Cancelled (its sleep ended) as soon as shutdown begins.
                try? await cancelWhenGracefulShutdown {
                    var sinceMaintenance = Duration.zero
                    while true {
                        try await Task.sleep(for: flushInterval)
                        await store.flush()
                        sinceMaintenance += flushInterval
                        if sinceMaintenance >= maintenanceInterval {
                            sinceMaintenance = .zero
                            await store.maintain()
                        }
                    }
                }
            }
        }
        await store.close()
    }
}
