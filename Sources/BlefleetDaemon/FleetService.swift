import FleetCore
import ServiceLifecycle

/// Keeps the fleet in step with BlueZ (its mirror) until graceful shutdown, then disconnects
/// every board and saves the registry before it stops. The fleet's other jobs are services
/// of their own in the daemon's group (``Fleet/services``), after this one: they stop first.
struct FleetService: Service {
    let fleet: Fleet

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await fleet.runMirror() }
            group.addTask {
                try await gracefulShutdown()
                await fleet.shutdown()
            }
            try await group.next()
            group.cancelAll()
        }
    }
}
