import FleetCore
import ServiceLifecycle

/// Runs the fleet (and with it the BlueZ mirror) until graceful shutdown, then disconnects
/// every board and saves the registry before it stops.
struct FleetService: Service {
    let fleet: Fleet

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await fleet.run() }
            group.addTask {
                try await gracefulShutdown()
                await fleet.shutdown()
            }
            try await group.next()
            group.cancelAll()
        }
    }
}
