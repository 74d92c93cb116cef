import BlueZ
import FleetCore
import FleetModel
import Logging

/// The fleet (the daemon's core, unchanged) on a ``SimulatedRadio``: what a classroom and a
/// scenario start from.
enum SimulatedFleet {
    /// A radio with adapters of `limits` and `boards` (in range of the adapters `ranges`
    /// says, else of hci0), and the fleet on it, every random draw from `seed`, on `clock`:
    /// in `blefleet-sim` the ``SimulationRuntime``'s (the registry on its serial executor,
    /// `registryExecutor`), in a test a ``ManualClock`` (the registry on a queue of its own).
    static func make(
        seed: UInt64, boards addresses: [String], ranges: [String: Set<Int>] = [:], limits: [Int],
        temperatureRefresh: Duration = .seconds(60), clock: any RadioClock, registryExecutor: (any SerialExecutor)? = nil,
        stateDirectory: String, logger: Logger
    ) -> (SimulatedRadio, BlueZClient, Fleet) {
        var random = SeededRandomNumberGenerator(seed: seed ^ 0xC1A5_5800)
        let boards = addresses.map { address in
            SimulatedRadio.Board(
                address: address, name: "nano-\(address.suffix(2))", temperature: Int8.random(in: 18...26, using: &random),
                inRange: ranges[address] ?? [0],
                rssi: Dictionary(uniqueKeysWithValues: (0..<limits.count).map { ($0, Int16.random(in: -85 ... -45, using: &random)) }))
        }
        let radio = SimulatedRadio(adapters: limits, boards: boards, seed: seed, clock: clock)
        let client = BlueZClient(bus: radio, management: SimulatedManagement(radio: radio), clock: clock, logger: logger)
        let registry = Registry(directory: stateDirectory, logger: logger, executor: registryExecutor)
        var adapterLimits: [String: Int] = [:]
        for (index, limit) in limits.enumerated() { adapterLimits["hci\(index)"] = limit }
        let configuration = FleetConfiguration(
            adapterLimits: adapterLimits, temperatureRefresh: temperatureRefresh, stateDirectory: stateDirectory)
        let fleet = Fleet(
            client: client, adapters: .all, configuration: configuration, registry: registry, logger: logger,
            randomness: { board in SeededRandomNumberGenerator(seed: seed ^ board.rawValue.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }) })
        return (radio, client, fleet)
    }

    /// The room's air, a second at a time (advertisements heard, notifications sent), until
    /// the task is cancelled.
    static func air(_ radio: SimulatedRadio, mirror: BlueZObjectMirror, clock: any RadioClock) -> Task<Void, Never> {
        Task {
            var second = 0
            while (try? await clock.sleep(for: .seconds(1))) != nil {
                second += 1
                await radio.tick(second, mirror: mirror)
            }
        }
    }
}
