import BlueZ
import FleetCore
import Foundation
import Logging
import TestSupport

@testable import FleetSimulation

/// A fleet (the daemon's core, unchanged) on a simulated radio and a ``ManualClock`` of its
/// own: time moves only when the test moves it, so what takes a classroom seconds takes the
/// test milliseconds, and nothing process-wide is taken over (as `blefleet-sim` does).
struct ManualFleet {
    let clock: ManualClock
    let radio: SimulatedRadio
    let fleet: Fleet
    let boards: [String]

    /// `boards` boards in range of hci0 (of `limit` links), the fleet running on them.
    static func with<T: Sendable>(
        boards count: Int, limit: Int = 7, seed: UInt64 = 1, _ body: (ManualFleet) async throws -> T
    ) async throws -> T {
        let stateDirectory = try makeTemporaryDirectory(prefix: "blefleet-manual")
        defer { try? FileManager.default.removeItem(at: stateDirectory) }
        var logger = Logger(label: "blefleet.tests.manual-fleet")
        logger.logLevel = ProcessInfo.processInfo.environment["BLEFLEET_TEST_LOG"] == nil ? .critical : .debug
        let clock = ManualClock()
        let boards = (1...count).map { String(format: "C0:FF:EE:00:5C:%02X", $0) }
        let (radio, client, fleet) = SimulatedFleet.make(
            seed: seed, boards: boards, limits: [limit], clock: clock, registryExecutor: clock.fileExecutor,
            stateDirectory: stateDirectory.path, logger: logger)
        let started = fleet.events.subscribe {
            if case .adapterPowered(true) = $0 { true } else { false }
        }
        let running = Task { try? await fleet.run() }
        let air = SimulatedFleet.air(radio, mirror: client.mirror, clock: clock)
        defer {
            air.cancel()
            running.cancel()
        }
        // Its start (the registry read from disk, the radio's objects mirrored) takes no
        // simulated time: time moves once the fleet has seen hci0 powered.
        let waiting = Task { await started.first { _ in true } != nil }
        let watchdog = Watchdog(limit: .seconds(10)) { waiting.cancel() }
        let powered = await waiting.value
        _ = watchdog.stop()
        guard powered else { throw FixtureError("the fleet did not see hci0 powered within 10 s of its start") }
        return try await body(ManualFleet(clock: clock, radio: radio, fleet: fleet, boards: boards))
    }

    /// Moves the clock on, `step` at a time, until `condition` holds; throws once `limit` of
    /// simulated time has passed without it. Between steps the clock settles (what a step
    /// woke has gone back to waiting) before time moves again.
    @discardableResult
    func advance(
        until what: String, within limit: Duration, step: Duration = .milliseconds(10), _ condition: () async -> Bool
    ) async throws -> Duration {
        let start = clock.now
        while !(await condition()) {
            guard clock.since(start) < limit else {
                throw FixtureError("not \(what) within \(limit) of simulated time; boards: \(await describe())")
            }
            clock.advance(by: step)
            await clock.settle()
        }
        return clock.since(start)
    }

    /// Moves the clock on by `duration`, `step` at a time.
    func advance(by duration: Duration, step: Duration = .milliseconds(10)) async {
        let end = clock.now + duration
        while clock.now < end {
            clock.advance(to: min(end, clock.now + step))
            await clock.settle()
        }
    }

    func snapshot(_ address: String) async -> BoardSnapshot? {
        await fleet.snapshots().first { $0.address.rawValue == address }
    }

    func describe() async -> String {
        await fleet.snapshots().map { "\($0.address) \($0.phase) via \($0.adapter ?? "-") failure \($0.lastFailure.map { "\($0)" } ?? "-")" }
            .joined(separator: ", ") + "; links \(radio.links); radio: "
            + radio.world.withLock { world in
                world.adapters.map { "hci\($0.index) discovering \($0.discovering), objects \(world.known[$0.index, default: []].sorted())" }
                    .joined(separator: ", ")
            }
    }

    /// Waits until every board is ready.
    func waitUntilAllReady(within limit: Duration = .seconds(30)) async throws {
        try await advance(until: "every board ready", within: limit) {
            await fleet.snapshots().filter { $0.phase == .ready }.count == boards.count
        }
    }
}
