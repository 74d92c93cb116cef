import BlueZ
import DBus
import Logging
import Testing

@testable import FleetCore

/// What a board decides from what BlueZ, the adapters and its connect tell it, and what it
/// asks its actor to do: checked as a value, without BlueZ or a clock.
@Suite struct BoardCoreTests {
    static let hci0 = BoardDevicesTests.hci0
    static let hci1 = BoardDevicesTests.hci1
    let t0 = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int((seconds * 1000).rounded())) }

    func device(_ adapter: AdapterPath, connected: Bool = false, resolved: Bool = false) -> BlueZDevice {
        BoardDevicesTests.device(adapter, connected: connected, resolved: resolved)
    }

    /// A board known to `adapters`, wanted connected; `room`: the adapters with a free slot.
    func core(knownTo adapters: [AdapterPath], room: Set<AdapterPath> = []) -> BoardCore {
        var core = BoardCore(
            machine: BoardStateMachine(random: SeededRandomNumberGenerator(seed: 1), present: !adapters.isEmpty, now: t0),
            live: BoardLive(clock: MachineClock(), devices: adapters.map { device($0) }), switches: BoardSwitches(desiredLED: .on), profile: .nano,
            hasRoom: { room.contains($0) })
        core.connectRequested(reason: .automatic, now: t0)
        _ = core.takeEffects()
        return core
    }

    /// `core` connected through `adapter` and prepared: ready.
    func ready(_ core: inout BoardCore, through adapter: AdapterPath) {
        core.connectStarts(through: adapter, device: device(adapter), now: at(0.1))
        core.connectEnded(.connected(through: adapter), awaited: false, now: at(0.2))
        let link = core.machine.link
        core.characteristicsFound(link: link, profile: .nano, now: at(0.3))
        _ = core.takeEffects()
    }

    /// What the machine asked for, whichever input asked it.
    enum Asked: Equatable {
        case connect(BoardStateMachine.ConnectAction)
        case linkUp(BoardStateMachine.LinkUpAction)
        case outcome(BoardStateMachine.OutcomeAction)
        case teardown(BoardStateMachine.TeardownAction)
    }

    func actions(_ effects: [BoardCore.Effect]) -> [Asked] {
        effects.compactMap {
            switch $0 {
            case .connect(let action): .connect(action)
            case .linkUp(let action): .linkUp(action)
            case .outcome(let action, _): .outcome(action)
            case .teardown(let action, _): .teardown(action)
            case .changed, .close, .ledApplied, .log: nil
            }
        }
    }

    func closed(_ effects: [BoardCore.Effect]) -> [AdapterPath] {
        effects.compactMap { if case .close(let device) = $0 { device.adapterPath } else { nil } }
    }

    func said(_ effects: [BoardCore.Effect]) -> [String] {
        effects.compactMap { if case .log(_, let message, _) = $0 { message.description } else { nil } }
    }

    @Test func workKeepsTheBoardBusyUntilTheLastEnds() {
        var board = core(knownTo: [Self.hci0])
        ready(&board, through: Self.hci0)
        #expect(!board.isBusy)
        board.workStarted()
        board.workStarted()
        #expect(board.isBusy)
        #expect(board.linkUsage(of: BoardAddress("AA:00:00:00:00:01")!, awaited: false, now: at(1)).isBusy)
        board.workEnded()
        #expect(board.isBusy)
        board.workEnded()
        #expect(!board.isBusy)
        #expect(!board.linkUsage(of: BoardAddress("AA:00:00:00:00:01")!, awaited: false, now: at(1)).isBusy)
    }

    @Test func aConnectThatFindsNoSlotWaitsInStandbyUnlessACallWaits() {
        var alone = core(knownTo: [Self.hci0])
        #expect(actions(alone.takeEffects()).isEmpty)
        alone.connectEnded(.noSlot(adapter: "hci0"), awaited: false, now: at(1))
        #expect(alone.machine.phase == .standby)
        #expect(!actions(alone.takeEffects()).contains(.connect(.startConnect)))

        var awaited = core(knownTo: [Self.hci0])
        awaited.connectRequested(reason: .command, now: at(0.5))
        _ = awaited.takeEffects()
        awaited.connectEnded(.noSlot(adapter: "hci0"), awaited: true, now: at(1))
        // A call that came meanwhile is served: the board connects again at once.
        #expect(actions(awaited.takeEffects()).contains(.connect(.startConnect)))
    }

    @Test func aBoardInStandbyNewlyHeardWhereThereIsRoomConnectsAndOnlyThere() {
        var board = core(knownTo: [Self.hci0], room: [Self.hci1])
        board.connectEnded(.noSlot(adapter: "hci0"), awaited: false, now: at(1))
        _ = board.takeEffects()
        // hci0 hears it again: no room there, it keeps waiting.
        let stillHeard = board.deviceUpdated(device(Self.hci0), changed: [.rssi], now: at(2))
        #expect(stillHeard)
        #expect(!actions(board.takeEffects()).contains(.connect(.startConnect)))
        // hci1, which has room, hears it for the first time: its turn.
        let heardThere = board.deviceUpdated(device(Self.hci1), changed: [.rssi], now: at(3))
        #expect(heardThere)
        let effects = board.takeEffects()
        #expect(actions(effects).contains(.connect(.startConnect)))
        #expect(effects.contains { if case .changed(.standby, .connecting, _, _) = $0 { true } else { false } })
    }

    @Test func aConnectThatFindsNoSlotWhileAnotherAdapterThatHeardItHasRoomConnectsAgainAtOnce() {
        // hci1 reported the board, or freed a slot, after the connect was placed on hci0.
        var board = core(knownTo: [Self.hci0, Self.hci1], room: [Self.hci1])
        board.connectEnded(.noSlot(adapter: "hci0"), awaited: false, now: at(1))
        let effects = board.takeEffects()
        #expect(actions(effects).contains(.connect(.startConnect)))
        #expect(board.machine.phase == .connecting)
        #expect(said(effects).contains("an adapter that heard it has room; connecting"))

        // With no room anywhere it waits in standby.
        var full = core(knownTo: [Self.hci0, Self.hci1])
        full.connectEnded(.noSlot(adapter: "hci0"), awaited: false, now: at(1))
        #expect(!actions(full.takeEffects()).contains(.connect(.startConnect)))
        #expect(full.machine.phase == .standby)
    }

    @Test func aReadyLinkReportedDownIsSaidLostOnceAndASecondLinkIsClosed() {
        var board = core(knownTo: [Self.hci0, Self.hci1])
        ready(&board, through: Self.hci0)
        #expect(board.machine.isReady)
        // Someone links it through hci1 too: that link only takes a slot.
        _ = board.deviceUpdated(device(Self.hci1, connected: true), changed: [.connected], now: at(5))
        let stray = board.takeEffects()
        #expect(closed(stray) == [Self.hci1])
        #expect(board.machine.isReady)
        // Its own link falls after the settle time.
        board.timerFired(.init(kind: .settle(link: board.machine.link), after: .seconds(3)), awaited: false, now: at(4))
        _ = board.takeEffects()
        _ = board.deviceUpdated(device(Self.hci0), changed: [.connected], now: at(6))
        let down = board.takeEffects()
        #expect(!board.machine.isReady)
        #expect(said(down) == ["link lost"])
        #expect(down.contains { if case .changed(.ready, _, nil, true) = $0 { true } else { false } })
    }

    @Test func aBoardOffAStuckAdapterClosesThatLinkAndTriesWhereItIsHeard() {
        var board = core(knownTo: [Self.hci0, Self.hci1])
        ready(&board, through: Self.hci0)
        // Another adapter's trouble is none of its business.
        board.adapterStuck(Self.hci1, now: at(4))
        #expect(board.takeEffects().isEmpty)
        board.adapterStuck(Self.hci0, now: at(5))
        let effects = board.takeEffects()
        #expect(closed(effects) == [Self.hci0])
        #expect(said(effects) == ["moving off a stuck adapter", "retrying connect later"])
        // hci1 knows it: it tries there after the shortest pause, no failure counted.
        #expect(actions(effects).contains(.connect(.startTimer(.init(kind: .retry(token: 1), after: .milliseconds(200))))))
        #expect(board.machine.lastFailure == nil)
        #expect(board.machine.failedAttempts == 0)
    }

    /// A controller reset through the kernel ends its links; one that answers nothing leaves
    /// a release unanswered, holding the kernel's queue the reset waits behind.
    @Test func aBoardOffAControllerThatAnswersNothingLeavesItsLinkToTheReset() {
        var board = core(knownTo: [Self.hci0, Self.hci1])
        ready(&board, through: Self.hci0)
        board.adapterStuck(Self.hci0, answersNothing: true, now: at(5))
        let effects = board.takeEffects()
        #expect(closed(effects).isEmpty)
        #expect(said(effects) == ["moving off a stuck adapter", "retrying connect later"])
        #expect(actions(effects).contains(.connect(.startTimer(.init(kind: .retry(token: 1), after: .milliseconds(200))))))
    }

    @Test func aLateDisconnectOfAnOldLinkLeavesTheNewOneAlone() {
        var board = core(knownTo: [Self.hci0, Self.hci1])
        ready(&board, through: Self.hci0)
        board.disconnectRequested(evicted: false, now: at(4))
        let release = board.takeEffects()
        // The release is told the device of the link it ends.
        #expect(release.contains { if case .teardown(.disconnect, let device?) = $0 { device.adapterPath == Self.hci0 } else { false } })
        board.disconnectReturned(from: device(Self.hci0).path, now: at(4.5))
        #expect(board.machine.phase == .discovered)
        board.connectRequested(reason: .command, now: at(5))
        ready(&board, through: Self.hci1)
        // hci0's disconnect, answered twice (its own task, and the call's wait): no-op now.
        board.disconnectReturned(from: device(Self.hci0).path, now: at(6))
        #expect(board.machine.isReady)
        #expect(board.takeEffects().isEmpty)
    }

    @Test func aSwitchPutBackCountsOnlyOnTheLinkItWasWrittenThrough() {
        var board = core(knownTo: [Self.hci0])
        ready(&board, through: Self.hci0)
        let first = board.machine.link
        board.blinkStarts(BoardProfile.ledSwitch)
        let counted = board.switchPutBack(BoardProfile.ledSwitch, on: true, link: first, now: at(1))
        #expect(counted)
        #expect(board.machine.currentLink?.appliedLED == true)
        #expect(board.switches.leftMidBlink == nil)
        // A write through a link that has since gone says nothing of the board's LED now.
        board.disconnectRequested(evicted: false, now: at(2))
        board.disconnectReturned(from: device(Self.hci0).path, now: at(2.1))
        board.connectRequested(reason: .command, now: at(3))
        ready(&board, through: Self.hci0)
        #expect(board.machine.link != first)
        let countedOnOldLink = board.switchPutBack(BoardProfile.ledSwitch, on: false, link: first, now: at(4))
        #expect(!countedOnOldLink)
        #expect(board.machine.currentLink?.appliedLED == nil)
    }

    /// The fleet's events say the LED was switched (a call's write, or put back on a link),
    /// and say nothing of another switch, nor of the blink of an identify.
    @Test func onlyTheLEDsWritesAreToldAndAnIdentifysBlinkIsNot() {
        var board = core(knownTo: [Self.hci0])
        ready(&board, through: Self.hci0)
        let link = board.machine.link
        func told(_ effects: [BoardCore.Effect]) -> [Bool] {
            effects.compactMap { if case .ledApplied(let on) = $0 { on } else { nil } }
        }
        board.switchWritten("buzzer", on: true, link: link, now: at(1))
        #expect(told(board.takeEffects()).isEmpty)
        board.switchWritten(BoardProfile.ledSwitch, on: true, link: link, now: at(2))
        #expect(told(board.takeEffects()) == [true])
        #expect(board.machine.currentLink?.appliedLED == true)
        board.blinkStarts(BoardProfile.ledSwitch)
        board.blinkEnded(BoardProfile.ledSwitch, wanted: false, link: link, now: at(3))
        #expect(told(board.takeEffects()).isEmpty)
        #expect(board.machine.currentLink?.appliedLED == false)
        board.blinkStarts(BoardProfile.ledSwitch)
        _ = board.switchPutBack(BoardProfile.ledSwitch, on: true, link: link, now: at(4))
        #expect(told(board.takeEffects()) == [true])
    }

    @Test func aLinkWhoseDeviceWentIsNoFailedConnectAndABoardNoAdapterKnowsIsAbsent() {
        var board = core(knownTo: [Self.hci0, Self.hci1])
        ready(&board, through: Self.hci0)
        let removed = board.deviceRemoved(adapter: Self.hci0, now: at(1))
        let removedAgain = board.deviceRemoved(adapter: Self.hci0, now: at(1))
        #expect(removed && !removedAgain)
        #expect(!board.machine.isReady)
        #expect(board.machine.lastFailure == nil)
        _ = board.takeEffects()
        // hci1 hears it: it connects there at once, with no backoff.
        _ = board.deviceUpdated(device(Self.hci1), changed: [.rssi], now: at(1.5))
        #expect(actions(board.takeEffects()) == [.connect(.startConnect)])
        let gone = board.allDevicesRemoved(now: at(2))
        let goneAgain = board.allDevicesRemoved(now: at(3))
        #expect(gone && !goneAgain)
        #expect(board.machine.phase == .absent)
        #expect(actions(board.takeEffects()) == [.teardown(.abandonConnection(failWaiters: .absent))])
    }
}
