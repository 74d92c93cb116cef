import FleetSimulation
import Testing
import TestSupport

/// The promises that something does not happen, proven over ten minutes of simulated time
/// (`blefleet-sim --scenario`, which runs the fleet on a simulated radio and clock in a
/// process of its own: the simulation takes the process's executor), not by waiting seconds.
@Suite struct SimulatedScenarioTests {
    @Test(arguments: Scenario.allCases)
    func thePromiseHoldsForTenSimulatedMinutes(scenario: Scenario) async throws {
        let output = try await runProcess(try builtExecutable("blefleet-sim"), ["--scenario", scenario.rawValue])
        #expect(output.hasPrefix("ok \(scenario.rawValue) "), "\(output)")
    }
}
