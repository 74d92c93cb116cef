import BlueZ
import Testing

@testable import FleetCore

@Suite struct PlacementTests {
    func candidate(
        _ name: String, rssi: Int?, free: Int = 3, queued: Int = 0, failures: Int = 0
    ) -> Placement.Candidate {
        .init(path: AdapterPath("/org/bluez/\(name)"), rssi: rssi, freeSlots: free, connectsInProgress: queued, recentFailures: failures)
    }

    @Test func theAdapterThatHearsTheBoardBestWins() {
        let decision = Placement.choose([candidate("hci0", rssi: -80), candidate("hci1", rssi: -50)])
        #expect(decision == .connect("/org/bluez/hci1"))
    }

    /// A bond's keys work only through the adapter that made it (pair() through the fleet, or
    /// bluetoothctl): the device connects there while it has room, heard better elsewhere or not.
    @Test func aBondedDeviceConnectsThroughTheAdapterThatHoldsItsBondWhileItHasRoom() {
        var bonded = candidate("hci0", rssi: -85)
        bonded.bonded = true
        #expect(Placement.choose([bonded, candidate("hci1", rssi: -45)]) == .connect("/org/bluez/hci0"))
        bonded.freeSlots = 0
        #expect(Placement.choose([bonded, candidate("hci1", rssi: -45)]) == .connect("/org/bluez/hci1"))
    }

    @Test func aFullAdapterGivesWayToOneWithRoomEvenIfItHearsBetter() {
        let decision = Placement.choose([candidate("hci0", rssi: -40, free: 0), candidate("hci1", rssi: -85)])
        #expect(decision == .connect("/org/bluez/hci1"))
    }

    @Test func everyAdapterFullPicksTheBestToFreeASlotOn() {
        let decision = Placement.choose(
            [candidate("hci0", rssi: -70, free: 0), candidate("hci1", rssi: -45, free: 0)])
        #expect(decision == .full("/org/bluez/hci1"))
    }

    @Test func queuedConnectsSpreadBoardsPlacedAtTheSameMoment() {
        // 6 dB better, but 2 connects queued there (12 dB): the other adapter goes first.
        let decision = Placement.choose(
            [candidate("hci0", rssi: -54, queued: 2), candidate("hci1", rssi: -60)])
        #expect(decision == .connect("/org/bluez/hci1"))
    }

    @Test func recentFailuresThroughAnAdapterSendTheBoardElsewhere() {
        let decision = Placement.choose(
            [candidate("hci0", rssi: -50, failures: 1), candidate("hci1", rssi: -60)])
        #expect(decision == .connect("/org/bluez/hci1"))
    }

    @Test func anAdapterThatReportsNoSignalRanksBelowAnyThatDoes() {
        let decision = Placement.choose([candidate("hci0", rssi: nil), candidate("hci1", rssi: -95)])
        #expect(decision == .connect("/org/bluez/hci1"))
    }

    @Test func equalScoresPreferMoreRoomThenTheLowerAdapterName() {
        #expect(
            Placement.choose([candidate("hci1", rssi: -60, free: 2), candidate("hci0", rssi: -60, free: 5)])
                == .connect("/org/bluez/hci0"))
        #expect(
            Placement.choose([candidate("hci1", rssi: -60), candidate("hci0", rssi: -60)])
                == .connect("/org/bluez/hci0"))
    }

    @Test func noAdapterHearsTheBoard() {
        #expect(Placement.choose([]) == .none)
    }
}
