import Testing

@testable import FleetCore

/// What a ready link writes to put a board's switches back as wanted: the LED as a user last
/// wanted it, a switch an identify left mid-blink.
@Suite struct BoardSwitchesTests {
    func writes(_ switches: BoardSwitches) -> [String] {
        switches.writes(for: .nano).map { "\($0.item.name)=\($0.on)" }
    }

    @Test func theLEDIsPutBackAsWantedAndNothingWhenNobodyAsked() {
        #expect(writes(BoardSwitches(desiredLED: .unknown)) == [])
        #expect(writes(BoardSwitches(desiredLED: .on)) == ["led=true"])
        #expect(writes(BoardSwitches(desiredLED: .off)) == ["led=false"])
    }

    @Test func aSwitchLeftMidBlinkIsPutBackOnceAsWantedOrOff() {
        #expect(writes(BoardSwitches(desiredLED: .on, leftMidBlink: "led")) == ["led=true"])
        #expect(writes(BoardSwitches(desiredLED: .unknown, leftMidBlink: "led")) == ["led=false"])
        // A switch the profile does not have is not written.
        #expect(writes(BoardSwitches(desiredLED: .unknown, leftMidBlink: "buzzer")) == [])
    }

    @Test func aSwitchPutBackIsNoLongerLeftMidBlink() {
        var switches = BoardSwitches(desiredLED: .unknown, leftMidBlink: "led")
        switches.putBack("temperature")
        #expect(switches.leftMidBlink == "led")
        switches.putBack("led")
        #expect(switches.leftMidBlink == nil)
        #expect(writes(switches) == [])
    }
}
