import Testing

@testable import FleetCore

@Suite struct BoardPhaseTests {
    @Test func wireNamesAreStable() {
        #expect(BoardPhase.allCases.map(\.rawValue) == [
            "discovered", "standby", "connecting", "resolving", "ready", "disconnecting",
            "backing-off", "absent", "waiting-for-adapter", "failed",
        ])
        #expect(BoardPhase(rawValue: "ready") == .ready)
    }
}
