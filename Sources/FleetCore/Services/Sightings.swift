import BlueZ
import Logging
import ServiceLifecycle
import Synchronization

/// When each board was seen, in the registry: at most every few seconds per board (while
/// discovering, advertisements come about once a second) unless its name changed. The fleet
/// notes the advertisements it handles; ``SightingsRecorder`` those recorded on the mirror.
final class Sightings: Sendable {
    let registry: Registry
    private let clock: any RadioClock
    private let logger: Logger
    /// When each board was last noted as seen, and under which name.
    private let noted = Mutex<[BoardAddress: (at: ContinuousClock.Instant, name: String?)]>([:])

    init(registry: Registry, clock: any RadioClock, logger: Logger) {
        self.registry = registry
        self.clock = clock
        self.logger = logger
    }

    /// Records that the board was seen (now, or not since `seen`: nothing to do).
    func note(_ address: BoardAddress, name: String?, seen: ContinuousClock.Instant? = nil) async {
        let now = clock.now
        let due = noted.withLock { noted -> Bool in
            let last = noted[address]
            if let seen, let last, last.at >= seen { return false }
            if let last, name == nil || name == last.name, last.at.duration(to: now) < .seconds(5) { return false }
            noted[address] = (now, name ?? last?.name)
            return true
        }
        guard due else { return }
        do {
            _ = try await registry.noteSeen(address, name: name)
        } catch {
            logger.error("could not save the board registry: \(error)", metadata: ["ble.address": "\(address)"])
        }
    }

    /// The board was forgotten.
    func forget(_ address: BoardAddress) {
        _ = noted.withLock { $0.removeValue(forKey: address) }
    }
}

/// Every few seconds: the boards whose advertisements were recorded on the mirror (they never
/// reach the fleet's loop) are noted as seen, and the registry saved when due.
struct SightingsRecorder: Service {
    let context: FleetContext
    let sightings: Sightings

    func run() async throws {
        while !Task.isCancelled {
            try await context.client.clock.sleep(for: .seconds(5))
            for (address, board) in context.boards {
                guard let seen = board.live.current.lastSeen else { continue }
                await sightings.note(address, name: nil, seen: seen)
            }
            try? await sightings.registry.flushIfDue()
        }
    }
}
