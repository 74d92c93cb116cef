import FleetCore
import Foundation
import Logging
import TestSupport

/// A running `Fleet` on a testbed's bus, with its registry in a temporary state directory.
struct FleetFixture {
    let testbed: Testbed
    let fleet: Fleet
    let stateDirectory: URL

    static func with<T: Sendable>(
        lane: Lane = .bluezoo, boards: Int, testbedArguments: [String] = [], adapters: AdapterSelection = .named("hci0"),
        configuration: (String) -> FleetConfiguration = { FleetConfiguration(stateDirectory: $0) },
        _ body: (FleetFixture) async throws -> T
    ) async throws -> T {
        try await Testbed.with(lane: lane, boards: boards, extraArguments: testbedArguments) { testbed in
            let stateDirectory = try makeTemporaryDirectory(prefix: "blefleet-state")
            defer { try? FileManager.default.removeItem(at: stateDirectory) }
            var logger = Logger(label: "blefleet.tests.fleet")
            logger.logLevel = ProcessInfo.processInfo.environment["BLEFLEET_TEST_LOG"] == nil ? .critical : .debug
            let registry = Registry(directory: stateDirectory.path, logger: logger)
            let fleet = try await Fleet.connect(
                bus: .address(testbed.busAddress), management: testbed.managementSocket.map { Fleet.Management.relay(path: $0) } ?? .none,
                adapters: adapters, configuration: configuration(stateDirectory.path),
                registry: registry, logger: logger)
            defer { fleet.close() }
            let runner = Task { try await fleet.run() }
            defer { runner.cancel() }
            return try await body(FleetFixture(testbed: testbed, fleet: fleet, stateDirectory: stateDirectory))
        }
    }

    /// Waits (event-driven, bounded) until `count` boards are ready.
    func waitUntilReady(_ count: Int, timeout: Duration = .seconds(15)) async throws {
        try await waitForFleet(timeout: timeout, "\(count) boards ready") { $0.readyCount >= count }
    }

    /// Re-checks `condition` on every fleet event until it holds or `timeout` (scaled for the
    /// lane) passes.
    func waitForFleet(
        timeout: Duration, _ what: String, _ condition: @escaping @Sendable (FleetStatus) -> Bool
    ) async throws {
        let fleet = self.fleet
        let state: @Sendable () async -> String = {
            "status: \(fleet.status.summary); boards: \(await fleet.snapshots().map { "\($0.name ?? "?") \($0.phase) \($0.adapter ?? "-")" })"
        }
        _ = try await waitForEvent(timeout: timeout, what, state: state) {
            condition(fleet.status) ? true : nil
        }
    }

    /// Re-reads the boards' snapshots on every fleet event (every phase change) until
    /// `condition` holds or `timeout` (scaled for the lane) passes; returns them.
    func waitForSnapshots(
        timeout: Duration, _ what: String, _ condition: @escaping @Sendable ([BoardSnapshot]) -> Bool
    ) async throws -> [BoardSnapshot] {
        let fleet = self.fleet
        return try await waitForEvent(timeout: timeout, what, state: { "boards: \(await fleet.snapshots().map(\.phase))" }) {
            let boards = await fleet.snapshots()
            return condition(boards) ? boards : nil
        }
    }

    /// Evaluates `check` now and after every fleet event until it gives a value, or throws
    /// after `timeout` (scaled for the lane), saying `what` was awaited and `state`.
    private func waitForEvent<T: Sendable>(
        timeout: Duration, _ what: String, state: @escaping @Sendable () async -> String,
        _ check: @escaping @Sendable () async -> T?
    ) async throws -> T {
        let timeout = testbed.lane.allowing(timeout)
        let events = fleet.events.subscribe()
        if let value = await check() { return value }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                for await _ in events {
                    if let value = await check() { return value }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let found = try await group.next() ?? nil
            group.cancelAll()
            guard let found else { throw FixtureError("timed out after \(timeout) waiting for \(what); \(await state())") }
            return found
        }
    }

    /// Polls `scripts/testbed state` (another process: there is no event to await) until
    /// `condition` holds, at most `timeout` (scaled for the lane).
    func waitForTestbed(
        timeout: Duration, _ what: String, _ condition: ([Testbed.Board]) -> Bool
    ) async throws -> [Testbed.Board] {
        var state: [Testbed.Board] = []
        try await eventually(what, within: testbed.lane.allowing(timeout), every: .milliseconds(200), otherwise: "testbed state: \(state)") {
            state = try await testbed.state()
            return condition(state)
        }
        return state
    }
}
