import BlueZ
import Testing

@testable import FleetCore

@Suite struct AdapterHealthTests {
    let t0 = ContinuousClock.now
    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int((seconds * 1000).rounded())) }

    @Test func twoCommandTimeoutsMakeItStuckAndRecoveryBeginsWithAPowerCycle() {
        var health = AdapterHealth(now: t0)
        #expect(health.commandTimedOut(now: at(1)) == .none)
        #expect(health.condition == .ok)
        #expect(health.commandTimedOut(now: at(3)) == .perform(.powerCycle, .commandsTimeOut))
        #expect(health.condition == .recovering)
        #expect(!health.isUsable)
    }

    /// Issue 52: a controller whose transport stalls keeps its links up at the boards; it
    /// answers no question about them, and a power cycle through BlueZ would wait on it.
    @Test func aControllerThatHoldsLinksAndAnswersNothingIsResetAtOnce() {
        var health = AdapterHealth(now: t0)
        #expect(health.commandTimedOut(now: at(1), aboutALink: true) == .none)
        #expect(health.commandTimedOut(now: at(3), aboutALink: true) == .perform(.reset, .commandsTimeOut))
        #expect(health.lastRecovery?.step == .reset && health.condition == .recovering)
        // Its reset's own end shows it answers again.
        guard case .recovered(let recovery) = health.stepCompleted(.reset, now: at(5)) else {
            Issue.record("the reset's power-on ends it")
            return
        }
        #expect(recovery.step == .reset && recovery.symptom == .commandsTimeOut)
    }

    /// Found hearing nothing first (its links had not carried enough to be judged silent), a
    /// controller that then leaves a command unanswered is reset at once (issue 52: it was
    /// power-cycled through BlueZ first, which waits on it, and reset 17-20 s after the hang).
    @Test func aControllerFoundHearingNothingThatLeavesACommandUnansweredIsResetAtOnce() {
        var health = AdapterHealth(now: t0)
        #expect(health.tick(now: at(0), discovering: true, heardElsewhere: true) == .none)
        #expect(health.tick(now: at(10), discovering: true, heardElsewhere: true) == .perform(.restartDiscovery, .hearsNothing))
        #expect(health.commandTimedOut(now: at(12), aboutALink: true) == .perform(.reset, .hearsNothing))
        #expect(health.lastRecovery?.step == .reset)
        #expect(health.commandTimedOut(now: at(13), aboutALink: true) == .none, "the reset already runs")
        #expect(health.tick(now: at(20), discovering: false, heardElsewhere: true) == .none, "its window runs from 12 s")
    }

    @Test func timeoutsFarApartOrWithWorkBetweenThemAreNotStuck() {
        var health = AdapterHealth(now: t0)
        _ = health.commandTimedOut(now: at(1))
        #expect(health.commandTimedOut(now: at(40)) == .none, "outside the window")
        _ = health.saw(.commandCompleted, now: at(41))
        #expect(health.commandTimedOut(now: at(42)) == .none, "a command completed since")
        #expect(health.condition == .ok)
    }

    @Test func stepsEscalateWhenTheControllerShowsNothingThenItCountsAsFailed() {
        var health = AdapterHealth(now: t0)
        _ = health.commandTimedOut(now: at(0))
        _ = health.commandTimedOut(now: at(1))
        #expect(health.tick(now: at(2), discovering: true, heardElsewhere: true) == .none, "the step's window runs")
        #expect(health.tick(now: at(9), discovering: false, heardElsewhere: true) == .perform(.reset, .commandsTimeOut))
        #expect(health.tick(now: at(19), discovering: false, heardElsewhere: true) == .gaveUp(.commandsTimeOut))
        #expect(health.condition == .failed)
        #expect(health.lastRecovery?.step == .reset && health.lastRecovery?.recoveredAt == nil)
        // The reset is tried again now and then.
        #expect(health.tick(now: at(50), discovering: false, heardElsewhere: true) == .none)
        #expect(health.tick(now: at(84), discovering: false, heardElsewhere: true) == .perform(.reset, .commandsTimeOut))
        // And when it works, the adapter is back.
        guard case .recovered(let recovery) = health.saw(.commandCompleted, now: at(86)) else {
            Issue.record("not recovered")
            return
        }
        #expect(recovery.recoveredAt == at(86) && recovery.symptom == .commandsTimeOut)
        #expect(health.condition == .ok && health.isUsable)
    }

    @Test func aPowerCycleTheControllerDoesNotAnswerGoesStraightToTheReset() {
        var health = AdapterHealth(now: t0)
        _ = health.commandTimedOut(now: at(0))
        #expect(health.commandTimedOut(now: at(1)) == .perform(.powerCycle, .commandsTimeOut))
        // Its power-off timed out at 5 s: the reset now, not when the 8-s window ends.
        #expect(health.stepFailed(.powerCycle, now: at(5)) == .perform(.reset, .commandsTimeOut))
        #expect(health.lastRecovery?.step == .reset)
        #expect(health.tick(now: at(9), discovering: false, heardElsewhere: true) == .none, "the reset's window runs from 5 s")
        // A step that is no longer running, or the last one, escalates nothing.
        #expect(health.stepFailed(.powerCycle, now: at(10)) == .none)
        #expect(health.stepFailed(.reset, now: at(11)) == .none)
        #expect(health.tick(now: at(15), discovering: false, heardElsewhere: true) == .gaveUp(.commandsTimeOut))
        var healthy = AdapterHealth(now: t0)
        #expect(healthy.stepFailed(.powerCycle, now: at(1)) == .none)
        #expect(healthy.condition == .ok)
    }

    @Test func duringAPowerCycleOnlyItsOwnPowerOnShowsTheControllerAnswers() {
        var health = AdapterHealth(now: t0)
        _ = health.commandTimedOut(now: at(0))
        #expect(health.commandTimedOut(now: at(1)) == .perform(.powerCycle, .commandsTimeOut))
        // A discovery stopped while the adapter is off "completes": no evidence.
        #expect(health.saw(.commandCompleted, now: at(1.1)) == .none)
        #expect(health.condition == .recovering)
        // Another step's end is not this one's.
        #expect(health.stepCompleted(.reset, now: at(1.5)) == .none)
        guard case .recovered(let recovery) = health.stepCompleted(.powerCycle, now: at(2)) else {
            Issue.record("the power cycle's own power-on ends it")
            return
        }
        #expect(recovery.step == .powerCycle && recovery.recoveredAt == at(2))
        #expect(health.isUsable)
        // Once healthy, a command that completes is plain evidence again.
        #expect(health.saw(.commandCompleted, now: at(3)) == .none)
        #expect(health.commandTimedOut(now: at(4)) == .none)
    }

    @Test func onlyEvidenceThatFitsTheSymptomEndsARecovery() {
        var health = AdapterHealth(now: t0)
        // Deaf: commands complete, but nothing is heard while it discovers.
        #expect(health.tick(now: at(1), discovering: true, heardElsewhere: true) == .none)
        #expect(health.tick(now: at(13), discovering: true, heardElsewhere: true) == .perform(.restartDiscovery, .hearsNothing))
        #expect(health.saw(.commandCompleted, now: at(14)) == .none, "discovery restarting is not hearing")
        guard case .recovered = health.saw(.heard, now: at(15)) else {
            Issue.record("an advertisement heard ends it")
            return
        }
        #expect(health.lastRecovery?.step == .restartDiscovery)
    }

    @Test func silenceCountsOnlyWhileDiscoveringAndWhenItsBoardsAreHeardElsewhere() {
        var health = AdapterHealth(now: t0)
        #expect(health.tick(now: at(30), discovering: false, heardElsewhere: true) == .none, "not scanning: nothing to hear")
        #expect(health.tick(now: at(30), discovering: true, heardElsewhere: false) == .none, "its boards may be off")
        // Discovery that runs in moments between connects (seen on one tick, not the next)
        // is no ten seconds of listening.
        #expect(health.tick(now: at(30.5), discovering: false, heardElsewhere: true) == .none)
        #expect(health.tick(now: at(31), discovering: true, heardElsewhere: true) == .none, "listening since 31 s only")
        _ = health.saw(.heard, now: at(31))
        #expect(health.tick(now: at(40.9), discovering: true, heardElsewhere: true) == .none)
        // Ten seconds of silence while its boards are heard elsewhere.
        #expect(health.tick(now: at(41), discovering: true, heardElsewhere: true) == .perform(.restartDiscovery, .hearsNothing))
    }

    @Test func connectsFailingWhileOthersSucceedMakeItStuckButNotAloneOrWithSuccessesOrForOneBoard() {
        let a = BoardAddress("AA:00:00:00:00:01")!, b = BoardAddress("AA:00:00:00:00:02")!
        var health = AdapterHealth(now: t0)
        for second in 1...5 { #expect(health.connectFailed(second % 2 == 0 ? a : b, now: at(Double(second)), othersConnected: false) == .none) }
        var oneBoard = AdapterHealth(now: t0)
        for second in 1...5 {
            #expect(oneBoard.connectFailed(a, now: at(Double(second)), othersConnected: true) == .none, "the board's fault")
        }
        var other = AdapterHealth(now: t0)
        _ = other.connectFailed(a, now: at(1), othersConnected: true)
        _ = other.connectFailed(b, now: at(2), othersConnected: true)
        _ = other.saw(.connected, now: at(3))
        #expect(other.connectFailed(a, now: at(4), othersConnected: true) == .none, "a success between them")
        _ = other.connectFailed(a, now: at(5), othersConnected: true)
        #expect(other.connectFailed(b, now: at(6), othersConnected: true) == .perform(.powerCycle, .connectsFail))
        #expect(other.saw(.heard, now: at(6.5)) == .none, "heard as the power cycle began: nothing shown yet")
        #expect(!other.isUsable)
        // A recovering adapter is given no connect that could show it works: an advertisement
        // heard after the power cycle does, and boards are placed on it again.
        guard case .recovered(let recovery) = other.saw(.heard, now: at(8)) else {
            Issue.record("an advertisement after the power cycle did not end the recovery")
            return
        }
        #expect(recovery.symptom == .connectsFail && other.isUsable)
        // Connects that fail again start another recovery.
        _ = other.connectFailed(a, now: at(9), othersConnected: true)
        _ = other.connectFailed(b, now: at(10), othersConnected: true)
        #expect(other.connectFailed(a, now: at(11), othersConnected: true) == .perform(.powerCycle, .connectsFail))
    }

    @Test func linksFallenSilentForFiveSecondsMakeItStuckAndRecoveryBeginsWithTheKernelsReset() {
        var health = AdapterHealth(now: t0)
        // Fully connected: nothing to hear, and it is not discovering; its links carried at 5 s.
        #expect(health.tick(now: at(9.9), discovering: false, heardElsewhere: false, linksCarried: at(5)) == .none)
        // A transport that hangs answers nothing: no power cycle through BlueZ (which would
        // wait on it), the kernel's reset at once.
        #expect(health.tick(now: at(10), discovering: false, heardElsewhere: false, linksCarried: at(5)) == .perform(.reset, .linksSilent))
        #expect(health.condition == .recovering && !health.isUsable)
        // The reset completed: the controller answers again.
        guard case .recovered(let recovery) = health.stepCompleted(.reset, now: at(11)) else {
            Issue.record("a command that completes ends it")
            return
        }
        #expect(recovery.symptom == .linksSilent && recovery.step == .reset)
        var unjudged = AdapterHealth(now: t0)
        #expect(unjudged.tick(now: at(60), discovering: false, heardElsewhere: false, linksCarried: nil) == .none, "nothing to judge by")
    }

    /// What the fleet gives the health to judge by: only links that notified every few
    /// seconds through this adapter count, two of them at least, and only while another
    /// adapter is seen to deliver (else bluetoothd or the bus stalled, not this controller).
    @Test func linksCountForSilenceOnlyWhenChattyEnoughAndOthersDeliver() {
        let hci0: AdapterPath = "/org/bluez/hci0", hci1: AdapterPath = "/org/bluez/hci1"
        let thresholds = AdapterHealth.Thresholds()
        func link(_ adapter: AdapterPath, at seconds: Double, gap: Double?) -> BoardLive.State {
            var state = BoardLive.State()
            state.carried = .init(adapter: adapter, at: at(seconds), gap: gap.map { .milliseconds(Int($0 * 1000)) })
            return state
        }
        let now = at(20)
        let elsewhere = link(hci1, at: 19, gap: 1)
        func judged(_ links: [BoardLive.State], others: [BoardLive.State] = [elsewhere]) -> ContinuousClock.Instant? {
            AdapterRecovery.linksCarried(through: hci0, readyLinks: links, everyBoard: links + others, thresholds: thresholds, now: now)
        }
        let chatty = [link(hci0, at: 5, gap: 1), link(hci0, at: 6, gap: 1)]
        #expect(judged(chatty) == at(6), "the newest of them")
        #expect(judged([chatty[0]]) == nil, "one link alone is that board's doing")
        #expect(judged([chatty[0], link(hci0, at: 6, gap: 30)]) == nil, "a link that notifies every 30 s says nothing in 10")
        #expect(judged([chatty[0], link(hci0, at: 6, gap: nil)]) == nil, "one notification is no rhythm")
        #expect(judged([chatty[0], link(hci1, at: 6, gap: 1)]) == nil, "what came through another adapter")
        #expect(judged(chatty, others: [link(hci1, at: 5, gap: 1)]) == nil, "nothing delivered elsewhere either")
        var heard = BoardLive.State()
        heard.devices = BoardDevices([BoardDevicesTests.device(hci1)])
        _ = heard.devices.advertised(rssi: nil, through: hci1, at: at(18))
        #expect(judged(chatty, others: [heard]) == at(6), "an advertisement through another adapter shows delivery")
    }
}
