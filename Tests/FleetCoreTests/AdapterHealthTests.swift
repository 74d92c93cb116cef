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

    @Test func onlyEvidenceThatFitsTheSymptomEndsARecovery() {
        var health = AdapterHealth(now: t0)
        // Deaf: commands complete, but nothing is heard.
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
        #expect(other.saw(.heard, now: at(7)) == .none, "hearing does not prove connects work")
    }
}
