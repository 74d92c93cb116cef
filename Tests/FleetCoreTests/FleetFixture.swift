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
                bus: .address(testbed.busAddress), adapters: adapters, configuration: configuration(stateDirectory.path),
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
        let timeout = testbed.lane.allowing(timeout)
        let events = fleet.events.subscribe()
        if condition(fleet.status) { return }
        let fleet = self.fleet
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in events {
                    if condition(fleet.status) { return true }
                }
                return false
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            let satisfied = try await group.next() ?? false
            group.cancelAll()
            if !satisfied {
                throw FixtureError("timed out after \(timeout) waiting for \(what); status: \(fleet.status.summary)")
            }
        }
    }

    /// Polls `scripts/testbed state` (another process: there is no event to await) until
    /// `condition` holds, at most `timeout` (scaled for the lane).
    func waitForTestbed(
        timeout: Duration, _ what: String, _ condition: ([Testbed.Board]) -> Bool
    ) async throws -> [Testbed.Board] {
        let timeout = testbed.lane.allowing(timeout)
        let deadline = ContinuousClock.now + timeout
        while true {
            let state = try await testbed.state()
            if condition(state) { return state }
            guard ContinuousClock.now < deadline else {
                throw FixtureError("timed out after \(timeout) waiting for \(what); testbed state: \(state)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
