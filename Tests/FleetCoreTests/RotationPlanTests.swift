import BlueZ
import Testing

@testable import FleetCore

/// The deadline of a call without a timeout: its rotations, planned as placement places the
/// boards (`RotationPlan`), and each adapter's rotation time.
@Suite struct RotationPlanTests {
    static func adapter(_ name: String, free: Int = 0, ahead: Int = 0, rotation: Duration = .seconds(1)) -> RotationPlan.Adapter {
        RotationPlan.Adapter(path: AdapterPath("/org/bluez/\(name)"), free: free, ahead: ahead, rotation: rotation)
    }

    static func heard(_ signals: [String: Int]) -> [AdapterPath: Int] {
        Dictionary(uniqueKeysWithValues: signals.map { (AdapterPath("/org/bluez/\($0.key)"), $0.value) })
    }

    @Test func freeSlotsThatCoverTheBoardsNeedNoRotation() {
        let boards = Array(repeating: Self.heard(["hci0": -50]), count: 3)
        #expect(RotationPlan.rotations(of: boards, on: [Self.adapter("hci0", free: 3)]) == .zero)
    }

    @Test func anAdapterJustPoweredOnListensBeforeItsFirstConnect() {
        var fresh = Self.adapter("hci0", free: 2, rotation: .milliseconds(500))
        fresh.startup = .seconds(1)
        // Its free slots alone take the boards: still after it has listened.
        #expect(RotationPlan.rotations(of: Array(repeating: Self.heard(["hci0": -50]), count: 2), on: [fresh]) == .seconds(1))
        // Four queued behind the two: the listening, then four rotations.
        #expect(RotationPlan.rotations(of: Array(repeating: Self.heard(["hci0": -50]), count: 6), on: [fresh]) == .seconds(3))
        // An adapter no board goes to costs nothing.
        #expect(RotationPlan.rotations(of: [Self.heard(["hci1": -50])], on: [fresh, Self.adapter("hci1", free: 1)]) == .zero)
    }

    @Test func oneAdapterWorksThroughItsQueueOneRotationAtATime() {
        let boards = Array(repeating: Self.heard(["hci0": -50]), count: 7)
        // Two boards take the free slots; five wait, behind the two of another call.
        let plan = RotationPlan.rotations(of: boards, on: [Self.adapter("hci0", free: 2, ahead: 2, rotation: .milliseconds(500))])
        #expect(plan == .milliseconds(3500))
    }

    @Test func boardsOnlyOneAdapterHearsWaitForThatOne() {
        // The fast adapter with many slots cannot take boards it does not hear.
        let boards = Array(repeating: Self.heard(["hci1": -60]), count: 6) + Array(repeating: Self.heard(["hci0": -60]), count: 6)
        let plan = RotationPlan.rotations(
            of: boards, on: [Self.adapter("hci0", rotation: .milliseconds(200)), Self.adapter("hci1", rotation: .seconds(1))])
        #expect(plan == .seconds(6))
    }

    @Test func boardsHeardAlikeAreSpreadByTheQueuesAsPlacementSpreadsThem() {
        let boards = Array(repeating: Self.heard(["hci0": -60, "hci1": -60]), count: 10)
        let plan = RotationPlan.rotations(of: boards, on: [Self.adapter("hci0"), Self.adapter("hci1")])
        #expect(plan == .seconds(5))
    }

    @Test func aMuchBetterSignalOutweighsAQueue() {
        // Heard 30 dB better through hci1: placement queues up to five boards there first.
        let boards = Array(repeating: Self.heard(["hci0": -80, "hci1": -50]), count: 6)
        let plan = RotationPlan.rotations(of: boards, on: [Self.adapter("hci0"), Self.adapter("hci1")])
        #expect(plan == .seconds(5))
    }

    @Test func aBoardNoAdapterIsKnownToHearMayGoAnywhere() {
        let plan = RotationPlan.rotations(of: [[:], [:]], on: [Self.adapter("hci0"), Self.adapter("hci1")])
        #expect(plan == .seconds(1))
    }
}
