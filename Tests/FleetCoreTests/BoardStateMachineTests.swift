import BlueZ
import Synchronization
import Testing

@testable import FleetCore

@Suite struct BoardStateMachineTests {
    let t0 = ContinuousClock.now
    let policy = ReconnectPolicy(
        initialDelay: .seconds(1), outOfResourcesDelay: .seconds(5), multiplier: 2,
        maximumDelay: .seconds(30), minimumDelay: .milliseconds(200), jitter: 0.2, maximumAttempts: 4)

    func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int((seconds * 1000).rounded())) }

    func machine(present: Bool = true, powered: Bool = true) -> BoardStateMachine {
        BoardStateMachine(policy: policy, random: SeededRandomNumberGenerator(seed: 7), present: present, adapterPowered: powered, now: t0)
    }

    /// Drives a fresh board to ready.
    func readyMachine() -> BoardStateMachine {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        m.connectSucceeded(through: hci0, now: at(0.1))
        _ = m.servicesResolved(now: at(0.2))
        _ = m.characteristicsFound(link: m.link, now: at(0.25))
        return m
    }

    let hci0: AdapterPath = "/org/bluez/hci0"

    /// What the machine answers once the characteristics of its link are found: ready, and
    /// the link's settle timer.
    func settling(_ m: BoardStateMachine) -> BoardStateMachine.LinkUpAction {
        .becomeReady(settle: .init(kind: .settle(link: m.link), after: BoardStateMachine.settleTime))
    }

    func becameReady(_ action: BoardStateMachine.LinkUpAction?) -> Bool {
        if case .becomeReady = action { return true }
        return false
    }

    /// The retry timer an input asks for, if any.
    func retry(_ action: BoardStateMachine.ConnectAction?) -> BoardStateMachine.Timer? {
        if case .startTimer(let timer) = action, case .retry = timer.kind { return timer }
        return nil
    }

    func retry(_ action: BoardStateMachine.OutcomeAction?) -> BoardStateMachine.Timer? {
        if case .startTimer(let timer) = action, case .retry = timer.kind { return timer }
        return nil
    }

    func retryDelay(_ action: BoardStateMachine.ConnectAction?) -> Duration? { retry(action)?.after }
    func retryDelay(_ action: BoardStateMachine.OutcomeAction?) -> Duration? { retry(action)?.after }

    func token(_ action: BoardStateMachine.ConnectAction?) -> UInt64? {
        if case .retry(let token) = retry(action)?.kind { return token }
        return nil
    }

    func token(_ action: BoardStateMachine.OutcomeAction?) -> UInt64? {
        if case .retry(let token) = retry(action)?.kind { return token }
        return nil
    }

    @Test func happyPathToReady() {
        var m = machine()
        #expect(m.phase == .discovered)
        #expect(m.connectRequested(now: at(0)) == .startConnect)
        #expect(m.phase == .connecting)
        m.connectAttemptStarted(through: hci0, now: at(0.01))
        #expect(m.attemptStartedAt == at(0.01))
        m.connectSucceeded(through: hci0, now: at(0.1))
        #expect(m.phase == .resolving)
        // Resolved: the profile's characteristics on this link are looked up; calls wait.
        #expect(m.servicesResolved(now: at(0.2)) == .lookUpCharacteristics(link: m.link))
        #expect(m.phase == .resolving)
        #expect(!m.isReady)
        #expect(m.holdsLink)
        #expect(m.characteristicsFound(link: m.link, now: at(0.25)) == settling(m))
        #expect(m.phase == .ready)
        #expect(m.isReady)
        #expect(m.holdsLink)
    }

    @Test func characteristicsOfALinkThatEndedAreIgnored() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        _ = m.servicesResolved(now: at(0.1))
        let first = m.link
        // The link goes while its characteristics are looked up, and a new one comes.
        #expect(m.disconnected(now: at(0.2)) == .linkLostEarly(failedAttempts: 1, through: hci0))
        #expect(m.link != first)
        #expect(m.advertisementSeen(now: at(5)) == .startConnect)
        m.connectAttemptStarted(through: hci0, now: at(5))
        #expect(m.servicesResolved(now: at(5.1)) == .lookUpCharacteristics(link: m.link))
        // The old lookup's answer comes late: it does not make the new link usable.
        #expect(m.characteristicsFound(link: first, now: at(5.2)) == .none)
        #expect(!m.isReady)
        #expect(m.characteristicsFound(link: m.link, now: at(5.3)) == settling(m))
        #expect(m.isReady)
    }

    @Test func aLinkMissingWhenItsCharacteristicsAreLookedUpIsALostLink() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        _ = m.servicesResolved(now: at(0.1))
        #expect(m.linkMissing(link: m.link &+ 1, now: at(0.2)) == .none)
        #expect(m.linkMissing(link: m.link, now: at(0.2)) == .linkLostEarly(failedAttempts: 1, through: hci0))
        #expect(m.phase == .absent)
        #expect(!m.holdsLink)
    }

    /// The rule violations told while `body` runs (instead of the assertion that stops a
    /// debug build).
    func violations(_ body: () -> Void) -> [BoardStateMachine.RuleViolation] {
        let told = Told()
        BoardStateMachine.$ruleViolated.withValue({ told.add($0) }, operation: body)
        return told.all
    }

    /// An input the machine's rules rule out is told, and changes nothing.
    @Test func anImpossibleInputIsToldAndIgnored() {
        // A link's characteristics are looked up once, in preparing: a second answer for the
        // current link is no second ready (and no second settle timer).
        var ready = readyMachine()
        let before = ready
        var again: BoardStateMachine.LinkUpAction?
        let foundTwice = violations { again = ready.characteristicsFound(link: ready.link, now: at(1)) }
        #expect(foundTwice.map(\.state) == [before.state])
        #expect(foundTwice.first?.input.contains("characteristics") == true)
        #expect(again == nil)
        #expect(ready.state == before.state)

        // The settle timer, and the lookup, of the current link, with no link.
        var idle = machine()
        var settled: BoardStateMachine.LinkUpAction?
        var missing: BoardStateMachine.OutcomeAction?
        let noLink = violations {
            settled = idle.settleTimerFired(link: idle.link, now: at(5))
            missing = idle.linkMissing(link: idle.link, now: at(5))
        }
        #expect(noLink.count == 2)
        #expect(settled == nil && missing == nil)
        #expect(idle.phase == .discovered)
    }

    /// Stale inputs (true when sent, overtaken since) are ignored by rule: no violation.
    @Test func staleInputsAreNoRuleViolation() {
        let told = violations {
            var m = readyMachine()
            let old = m.link
            _ = m.disconnectRequested(now: at(1))
            _ = m.disconnected(now: at(1.1))
            // The old link's answers and timers, and BlueZ telling again what is known.
            _ = m.characteristicsFound(link: old, now: at(1.2))
            _ = m.linkMissing(link: old, now: at(1.2))
            _ = m.settleTimerFired(link: old, now: at(5))
            m.ledWritten(true, link: old)
            _ = m.disconnected(now: at(1.3))
            _ = m.servicesResolved(now: at(1.3))
            // The outcome of a connect cancelled while queued, and an old retry timer; a
            // call's write through a session made for a link not ready.
            _ = m.connectRequested(now: at(2))
            m.ledWritten(true, link: m.link)
            _ = m.disconnectRequested(now: at(2.1))
            _ = m.connectFailed(.transient, now: at(2.2))
            m.slotUnavailable(now: at(2.2))
            _ = m.retryTimerFired(token: 1, now: at(3))
            // Anything after the board is forgotten.
            _ = m.forget(now: at(4))
            _ = m.advertisementSeen(now: at(5))
            _ = m.disconnected(now: at(5))
            #expect(m.isForgotten)
        }
        #expect(told.isEmpty, "\(told)")
    }

    @Test func aBoardWhoseAdapterWentIsMovingNotGoneForAWhile() {
        var m = readyMachine()
        _ = m.disconnected(now: at(1))
        #expect(m.phase == .absent)
        #expect(!m.isMoving(at: at(1)))
        // Another adapter knows it: it connects there (after the minimum delay).
        let action = m.linkAdapterWent(heardElsewhere: true, now: at(1))
        #expect(retryDelay(action) != nil || action == .startConnect)
        var unheard = readyMachine()
        _ = unheard.disconnected(now: at(1))
        #expect(unheard.linkAdapterWent(heardElsewhere: false, now: at(1)) == .none)
        #expect(unheard.isMoving(at: at(2)))
        #expect(!unheard.isMoving(at: at(1) + BoardStateMachine.moveGrace))
        // Heard again: no longer moving.
        _ = unheard.advertisementSeen(now: at(3))
        #expect(!unheard.isMoving(at: at(3)))
    }

    /// A stuck adapter's boards move off it; when that adapter is then reset (powered off and
    /// on) before anything heard them, they are still moving: a call waits for them rather
    /// than be answered absent (found by the simulation, seed 136).
    @Test func aBoardMovingOffItsAdapterIsStillMovingAfterThatAdapterIsReset() {
        var m = readyMachine()
        _ = m.disconnected(now: at(1))
        _ = m.linkAdapterWent(heardElsewhere: false, now: at(1))
        _ = m.adapterPoweredOff(now: at(1.05))
        #expect(m.phase == .waitingForAdapter)
        _ = m.adapterPoweredOn(now: at(1.1))
        #expect(m.phase == .absent)
        #expect(m.isMoving(at: at(1.2)))
        #expect(!m.isMoving(at: at(1) + BoardStateMachine.moveGrace))
        // One absent for a while before the reset is not.
        var gone = readyMachine()
        _ = gone.disconnected(now: at(1))
        _ = gone.adapterPoweredOff(now: at(2))
        _ = gone.adapterPoweredOn(now: at(2.1))
        #expect(!gone.isMoving(at: at(2.2)))
    }

    @Test func aBoardBeyondTheSlotsWaitsInStandbyWithoutRetryOrFailure() {
        var m = machine()
        _ = m.connectRequested(reason: .automatic, now: at(0))
        m.slotUnavailable(now: at(0.1))
        #expect(m.phase == .standby)
        #expect(!m.holdsLink)
        #expect(m.lastFailure == nil)
        #expect(m.failedAttempts == 0)
        // The automatic policy asking again does not connect: it waits its turn.
        #expect(m.connectRequested(reason: .automatic, now: at(1)) == .none)
        #expect(m.phase == .standby)
        // Room (an adapter came) or a command connects it.
        var roomy = m
        #expect(roomy.connectionRoomAppeared(now: at(2)) == .startConnect)
        #expect(m.connectRequested(reason: .command, now: at(2)) == .startConnect)
        #expect(m.phase == .connecting)
    }

    @Test func anEvictedBoardWaitsItsTurnInStandby() {
        var m = readyMachine()
        #expect(m.disconnectRequested(now: at(1), evicted: true) == .disconnect(failWaiters: nil))
        #expect(m.phase == .disconnecting)
        #expect(m.disconnected(now: at(1.1)) == .none)
        #expect(m.phase == .standby)
        // It is still wanted: room (an adapter came) gives it a slot again.
        var roomy = m
        #expect(roomy.connectionRoomAppeared(now: at(2)) == .startConnect)
        // A user's disconnect leaves it discovered (nothing pending).
        var user = readyMachine()
        _ = user.disconnectRequested(now: at(1))
        _ = user.disconnected(now: at(1.1))
        #expect(user.phase == .discovered)
        // A command while the eviction completes connects it again afterwards.
        var wanted = readyMachine()
        _ = wanted.disconnectRequested(now: at(1), evicted: true)
        _ = wanted.connectRequested(reason: .command, now: at(1.05))
        #expect(wanted.disconnected(now: at(1.1)) == .startConnect)
    }

    @Test func standbyFollowsTheBoardAndTheAdapter() {
        var m = machine()
        _ = m.connectRequested(reason: .automatic, now: at(0))
        m.slotUnavailable(now: at(0.1))
        var vanished = m
        #expect(vanished.deviceVanished(now: at(1)) == .none)
        #expect(vanished.phase == .absent)
        var off = m
        #expect(off.adapterPoweredOff(now: at(1)) == .none)
        #expect(off.phase == .waitingForAdapter)
        var released = m
        #expect(released.disconnectRequested(now: at(1)) == .none)
        #expect(released.phase == .discovered)
        var adopted = m
        adopted.connectSucceeded(through: hci0, now: at(1))
        #expect(adopted.phase == .resolving)
        // Only a connect in progress goes to standby.
        var ready = readyMachine()
        ready.slotUnavailable(now: at(1))
        #expect(ready.phase == .ready)
    }

    @Test func servicesResolvedBeforeConnectedStillBecomesReady() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        #expect(m.servicesResolved(now: at(0.1)) == .lookUpCharacteristics(link: m.link))
        #expect(m.characteristicsFound(link: m.link, now: at(0.15)) == settling(m))
        #expect(m.phase == .ready)
    }

    @Test func connectingIsIdempotent() {
        var m = machine()
        #expect(m.connectRequested(now: at(0)) == .startConnect)
        #expect(m.connectRequested(now: at(0.01)) == .none)
        m.connectAttemptStarted(through: hci0, now: at(0.02))
        #expect(m.connectRequested(now: at(0.03)) == .none)
        m.connectSucceeded(through: hci0, now: at(0.1))
        #expect(m.connectRequested(now: at(0.11)) == .none)
        _ = m.servicesResolved(now: at(0.2))
        #expect(m.connectRequested(now: at(0.25)) == .none)
        _ = m.characteristicsFound(link: m.link, now: at(0.25))
        #expect(m.connectRequested(now: at(0.3)) == .none)
        #expect(m.isReady)
    }

    @Test func transientFailureBacksOffThenRetriesOnTheTimer() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        let action = m.connectFailed(.transient, now: at(1))
        #expect(m.phase == .backingOff)
        #expect(m.lastFailure == .transient)
        let delay = try! #require(retryDelay(action))
        #expect(delay >= .milliseconds(800) && delay <= .milliseconds(1200))
        // Reconnecting by itself while backing off does not bypass the delay.
        #expect(m.connectRequested(reason: .automatic, now: at(1.1)) == .none)
        #expect(m.retryTimerFired(token: token(action)!, now: at(2)) == .startConnect)
        #expect(m.phase == .connecting)
    }

    @Test func aCommandWhileBackingOffConnectsAtOnceAndTheStaleTimerIsIgnored() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        let action = m.connectFailed(.transient, now: at(1))
        #expect(m.phase == .backingOff)
        // Someone is waiting for this board: try now rather than after the delay.
        #expect(m.connectRequested(reason: .command, now: at(1.1)) == .startConnect)
        #expect(m.phase == .connecting)
        #expect(m.retryTimerFired(token: token(action)!, now: at(2)) == .none)
    }

    @Test func backoffGrowsAndSuccessResetsIt() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        var delays: [Duration] = []
        for i in 0..<3 {
            m.connectAttemptStarted(through: hci0, now: at(Double(i)))
            let action = m.connectFailed(.transient, now: at(Double(i)))
            delays.append(retryDelay(action)!)
            #expect(m.retryTimerFired(token: token(action)!, now: at(Double(i) + 0.5)) == .startConnect)
        }
        #expect(delays[0] < delays[1] && delays[1] < delays[2])
        #expect(m.failedAttempts == 3)
        m.connectAttemptStarted(through: hci0, now: at(10))
        m.connectSucceeded(through: hci0, now: at(10))
        #expect(m.servicesResolved(now: at(10)) == .lookUpCharacteristics(link: m.link))
        #expect(m.lastFailure == nil)
        // The streak ends once the link has lasted.
        #expect(m.failedAttempts == 3)
        #expect(m.characteristicsFound(link: m.link, now: at(10.1)) == settling(m))
        #expect(m.settleTimerFired(link: m.link, now: at(11)) == .none)
        #expect(m.settleTimerFired(link: m.link &+ 1, now: at(20)) == .none)
        #expect(m.settleTimerFired(link: m.link, now: at(10) + BoardStateMachine.settleTime) == .linkSettled(afterFailures: 3, through: hci0))
        #expect(m.failedAttempts == 0)
        #expect(m.settleTimerFired(link: m.link, now: at(20)) == .none)
    }

    @Test func aLinkLostAsSoonAsItCameUpIsAFailedConnectThatBacksOff() {
        // Le-connection-abort, 0x3e, a MIC failure: the link comes up and falls at once.
        var m = readyMachine()
        #expect(m.disconnected(now: at(1.2)) == .linkLostEarly(failedAttempts: 1, through: hci0))
        #expect(m.phase == .absent)
        #expect(!m.holdsLink)
        #expect(m.lastFailure == .transient)
        // Heard again at once: the retry waits the streak's backoff (1 s ± 20 % after the loss).
        let firstRetry = try! #require(retry(m.advertisementSeen(now: at(1.3))))
        let first = firstRetry.after
        #expect(first >= .milliseconds(600) && first <= .milliseconds(1100))
        #expect(m.failedAttempts == 1)
        // It falls again while resolving: the streak grows, and so does the wait.
        var action = m.retryTimerFired(token: try! #require(token(BoardStateMachine.ConnectAction.startTimer(firstRetry))), now: at(3))
        #expect(action == .startConnect)
        m.connectAttemptStarted(through: hci0, now: at(3))
        m.connectSucceeded(through: hci0, now: at(3.1))
        #expect(m.disconnected(now: at(3.2)) == .linkLostEarly(failedAttempts: 2, through: hci0))
        let secondRetry = try! #require(retry(m.advertisementSeen(now: at(3.3))))
        #expect(secondRetry.after > first)
        // The third link lasts: one streak of two failures, told once.
        action = m.retryTimerFired(token: try! #require(token(BoardStateMachine.ConnectAction.startTimer(secondRetry))), now: at(6))
        #expect(action == .startConnect)
        m.connectAttemptStarted(through: hci0, now: at(6))
        m.connectSucceeded(through: hci0, now: at(6.1))
        _ = m.servicesResolved(now: at(6.2))
        _ = m.characteristicsFound(link: m.link, now: at(6.3))
        #expect(m.settleTimerFired(link: m.link, now: at(9.3)) == .linkSettled(afterFailures: 2, through: hci0))
        #expect(m.lastFailure == nil)
        // A link lost after it lasted is a board gone, not a failed connect.
        #expect(m.disconnected(now: at(30)) == .abandonConnection(failWaiters: nil))
        #expect(m.failedAttempts == 0)
        #expect(m.advertisementSeen(now: at(31)) == .startConnect)
    }

    @Test func aYoungLinkThatWentWithItsAdapterIsNoFailedConnect() {
        // The adapter's loss known first: no failure at all.
        var first = readyMachine()
        #expect(first.disconnected(now: at(1), withAdapter: true) == .abandonConnection(failWaiters: nil))
        #expect(first.failedAttempts == 0 && first.lastFailure == nil)
        // BlueZ reported the link down before the adapter: the failure is taken back, and the
        // board connects elsewhere without the streak's backoff.
        var later = readyMachine()
        #expect(later.disconnected(now: at(1)) == .linkLostEarly(failedAttempts: 1, through: hci0))
        later.linkLossForgiven()
        #expect(later.failedAttempts == 0 && later.lastFailure == nil)
        #expect(retryDelay(later.linkAdapterWent(heardElsewhere: true, now: at(2))) == policy.minimumDelay)
    }

    @Test func aBoardMovingFromItsLostAdapterIsWaitedForNotAnsweredAbsent() {
        // Its adapter went and no other hears it yet: a call waits for it.
        var m = readyMachine()
        _ = m.disconnected(now: at(1), withAdapter: true)
        _ = m.linkAdapterWent(heardElsewhere: false, now: at(1))
        #expect(m.connectRequested(reason: .command, now: at(1.2)) == .none)
        #expect(m.isMoving(at: at(1.2)))
        // Past the grace it is absent, and a call is told so.
        #expect(m.connectRequested(reason: .command, now: at(1) + BoardStateMachine.moveGrace) == .failWaiters(.absent))

        // Heard elsewhere, its connect finds no adapter hearing it after all (an advertisement
        // from before): still moving, the callers wait.
        var n = readyMachine()
        _ = n.disconnected(now: at(1), withAdapter: true)
        let retry = n.linkAdapterWent(heardElsewhere: true, now: at(1))
        if let token = token(retry) { #expect(n.retryTimerFired(token: token, now: at(1.3)) == .startConnect) }
        n.connectAttemptStarted(through: hci0, now: at(1.3))
        #expect(n.connectFailed(.absent, now: at(1.4)) == .none)
        #expect(n.isMoving(at: at(1.4)))
    }

    @Test func aStaleLinkAdoptedAndLostWhileMovingIsTheMoveNotAFailedConnect() {
        var m = readyMachine()
        _ = m.disconnected(now: at(1), withAdapter: true)
        _ = m.linkAdapterWent(heardElsewhere: false, now: at(1))
        // BlueZ reports the old link up once more, then down.
        m.connectSucceeded(through: hci0, now: at(1.1))
        #expect(m.disconnected(now: at(1.2)) == .abandonConnection(failWaiters: nil))
        #expect(m.failedAttempts == 0 && m.lastFailure == nil)
        #expect(m.isMoving(at: at(1.3)))
    }

    @Test func aLinkThatLastedWithoutItsSettleTimerIsNoFailureWhenLost() {
        var m = readyMachine()
        #expect(m.disconnected(now: at(0.2) + BoardStateMachine.settleTime) == .abandonConnection(failWaiters: nil))
        #expect(m.lastFailure == nil)
    }

    @Test func aLinkClosedOnPurposeSoonAfterItCameUpIsNoFailure() {
        var m = readyMachine()
        _ = m.disconnectRequested(now: at(0.5))
        #expect(m.disconnected(now: at(0.6)) == .none)
        #expect(m.phase == .discovered)
        #expect(m.failedAttempts == 0)
        #expect(m.lastFailure == nil)
    }

    @Test func staleTimerIsIgnored() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        let first = m.connectFailed(.transient, now: at(0))
        _ = m.disconnectRequested(now: at(0.1))
        #expect(m.phase == .discovered)
        _ = m.connectRequested(now: at(0.2))
        m.connectAttemptStarted(through: hci0, now: at(0.2))
        let second = m.connectFailed(.transient, now: at(0.3))
        #expect(token(first) != token(second))
        #expect(m.retryTimerFired(token: token(first)!, now: at(1)) == .none)
        #expect(m.phase == .backingOff)
        #expect(m.retryTimerFired(token: token(second)!, now: at(5)) == .startConnect)
    }

    @Test func everyRetryPathWaitsAtLeastTheFloor() {
        // Hammer the machine with failures and link losses: every retry has a delay ≥ floor,
        // and a connect never starts straight from a failure or a link loss.
        var m = machine()
        var now = 0.0
        _ = m.connectRequested(now: at(now))
        for round in 0..<50 {
            now += 0.01
            m.connectAttemptStarted(through: hci0, now: at(now))
            let action: BoardStateMachine.OutcomeAction?
            if round % 3 == 0 {
                m.connectSucceeded(through: hci0, now: at(now))
                _ = m.servicesResolved(now: at(now))
                action = m.disconnected(now: at(now))
            } else {
                action = m.connectFailed(round % 2 == 0 ? .transient : .outOfResources, now: at(now))
            }
            #expect(action != .startConnect)
            switch action {
            case .startTimer(let timer):
                guard case .retry = timer.kind else {
                    Issue.record("a timer other than a retry: \(timer)")
                    break
                }
                #expect(timer.after >= policy.minimumDelay)
                guard case .retry(let token) = timer.kind else { break }
                #expect(m.retryTimerFired(token: token, now: at(now) + timer.after) == .startConnect)
            case .waitForAdvertisement, .abandonConnection(failWaiters: nil), .linkLostEarly:
                // Too many failures, or a lost link: absent. The next advertisement brings it
                // back only after the floor.
                #expect(m.phase == .absent)
                let early = m.advertisementSeen(now: at(now))
                #expect(retryDelay(early)! >= policy.minimumDelay)
                #expect(m.retryTimerFired(token: token(early)!, now: at(now + 1)) == .startConnect)
            default:
                Issue.record("unexpected \(action)")
            }
        }
    }

    @Test func outOfResourcesWaitsLongerThanTransient() {
        var a = machine()
        _ = a.connectRequested(now: at(0))
        let transient = retryDelay(a.connectFailed(.transient, now: at(0)))!
        var b = machine()
        _ = b.connectRequested(now: at(0))
        let resources = retryDelay(b.connectFailed(.outOfResources, now: at(0)))!
        #expect(resources > transient * 3)
    }

    @Test func permanentFailureStopsUntilAnExplicitCommand() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        #expect(m.connectFailed(.permanent, now: at(0.5)) == .failWaiters(.failed))
        #expect(m.phase == .failed)
        #expect(m.advertisementSeen(now: at(1)) == .none)
        #expect(m.connectRequested(reason: .automatic, now: at(2)) == .none)
        #expect(m.phase == .failed)
        #expect(m.connectRequested(reason: .command, now: at(3)) == .startConnect)
        #expect(m.failedAttempts == 0)
        // A transient failure of that explicit attempt backs off from the first step again.
        m.connectAttemptStarted(through: hci0, now: at(3))
        let delay = retryDelay(m.connectFailed(.transient, now: at(4)))
        #expect(delay.map { $0 <= .milliseconds(1200) } == true)
    }

    @Test func absentBoardWaitsForItsNextAdvertisement() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        #expect(m.connectFailed(.absent, now: at(1)) == .waitForAdvertisement(failWaiters: .absent))
        #expect(m.phase == .absent)
        // A command meanwhile fails fast instead of connecting blindly.
        #expect(m.connectRequested(now: at(2)) == .failWaiters(.absent))
        #expect(m.phase == .absent)
        // It advertises again (well after the floor): connect at once.
        #expect(m.advertisementSeen(now: at(5)) == .startConnect)
    }

    @Test func aBoardWhoseLinkFellMomentsAgoIsWaitedForBeforeItIsCalledAbsent() {
        var m = readyMachine()
        // Long after its resolve: a lost link, not a failed connect.
        _ = m.disconnected(now: at(10))
        #expect(m.phase == .absent)
        #expect(m.relinkGraceLeft(at: at(10.2)) == .milliseconds(300))
        #expect(m.relinkGraceLeft(at: at(10.5)) == nil)
        // Its adapter's loss told just after: it moves, and the grace no longer applies.
        _ = m.linkAdapterWent(heardElsewhere: false, now: at(10.1))
        #expect(m.isMoving(at: at(10.2)))
        #expect(m.relinkGraceLeft(at: at(10.2)) == nil)
    }

    @Test func aCallWaitingForABoardWhoseLinkFellWaitsOutTheGraceOnATimerTheMachineAsksFor() {
        var m = readyMachine()
        _ = m.disconnected(now: at(10))
        #expect(m.callWaiting(now: at(10.1)) == .startTimer(.init(kind: .relinkGrace, after: .milliseconds(400))))
        #expect(m.phase == .absent)
        // Nobody waits any more when it fires: nothing happens.
        #expect(m.relinkGraceEnded(awaited: false, now: at(10.5)) == .none)
        // A call still waits, and the board was not heard: it is told the board is absent.
        #expect(m.relinkGraceEnded(awaited: true, now: at(10.5)) == .failWaiters(.absent))
        // A moving board is connected by its advertisement elsewhere: a call just waits.
        var moving = readyMachine()
        _ = moving.disconnected(now: at(10), withAdapter: true)
        _ = moving.linkAdapterWent(heardElsewhere: false, now: at(10))
        #expect(moving.callWaiting(now: at(10.1)) == .none)
        #expect(moving.relinkGraceEnded(awaited: true, now: at(10.6)) == .none)
    }

    @Test func theLinkIsRecordedOnceAndFollowsTheBoardThroughItsStates() {
        var m = machine()
        #expect(m.linkAdapter == nil)
        _ = m.connectRequested(now: at(0))
        #expect(m.linkAdapter == nil, "a queued connect has no adapter yet")
        m.connectAttemptStarted(through: hci0, now: at(0))
        #expect(m.linkAdapter == hci0)
        m.connectSucceeded(through: hci0, now: at(0.1))
        _ = m.servicesResolved(now: at(0.2))
        _ = m.characteristicsFound(link: m.link, now: at(0.25))
        #expect(m.linkAdapter == hci0)
        // Going down, the link still holds its slot on that adapter.
        _ = m.disconnectRequested(now: at(5))
        #expect(m.phase == .disconnecting)
        #expect(m.linkAdapter == hci0)
        _ = m.disconnected(now: at(5.1))
        #expect(m.phase == .discovered)
        #expect(m.linkAdapter == nil)
        #expect(m.lastLinkAdapter == hci0)
    }

    @Test func aLinkSomeoneElseMadeIsAdoptedAndItsEarlyLossCountsForNoAdapterOfOurs() {
        let hci1: AdapterPath = "/org/bluez/hci1"
        var m = machine()
        _ = m.connectRequested(now: at(0))
        // Still queued when another client's link through hci1 comes up: adopted there.
        m.connectSucceeded(through: hci1, now: at(0.1))
        #expect(m.linkAdapter == hci1)
        _ = m.servicesResolved(now: at(0.2))
        _ = m.characteristicsFound(link: m.link, now: at(0.3))
        #expect(m.disconnected(now: at(0.5)) == .linkLostEarly(failedAttempts: 1, through: nil))
        // Our own connect through hci0 that lasts is credited to hci0.
        #expect(m.advertisementSeen(now: at(6)) == .startConnect)
        m.connectAttemptStarted(through: hci0, now: at(6))
        m.connectSucceeded(through: hci0, now: at(6.1))
        _ = m.servicesResolved(now: at(6.2))
        _ = m.characteristicsFound(link: m.link, now: at(6.3))
        #expect(m.settleTimerFired(link: m.link, now: at(9.2)) == .linkSettled(afterFailures: 1, through: hci0))
    }

    @Test func aBoardWhoseDeviceVanishedGetsNoRelinkGrace() {
        var m = readyMachine()
        _ = m.disconnected(now: at(10))
        _ = m.deviceVanished(now: at(10.1))
        #expect(m.relinkGraceLeft(at: at(10.2)) == nil)
        #expect(m.connectRequested(now: at(10.2)) == .failWaiters(.absent))
    }

    @Test func advertisementRightAfterAbsenceStillWaitsTheFloor() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        _ = m.connectFailed(.absent, now: at(1))
        let action = m.advertisementSeen(now: at(1.05))
        #expect(retryDelay(action) == .milliseconds(150))
        #expect(m.phase == .backingOff)
        #expect(m.retryTimerFired(token: token(action)!, now: at(1.2)) == .startConnect)
    }

    @Test func unwantedAbsentBoardComesBackAsDiscovered() {
        var m = machine(present: false)
        #expect(m.phase == .absent)
        #expect(m.advertisementSeen(now: at(1)) == .none)
        #expect(m.phase == .discovered)
    }

    @Test func tooManyTransientFailuresMakeTheBoardAbsent() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        var last: BoardStateMachine.OutcomeAction?
        for i in 1...4 {
            m.connectAttemptStarted(through: hci0, now: at(Double(i)))
            last = m.connectFailed(.transient, now: at(Double(i)))
            if let token = token(last) { _ = m.retryTimerFired(token: token, now: at(Double(i) + 0.9)) }
        }
        #expect(last == .waitForAdvertisement(failWaiters: .absent))
        #expect(m.phase == .absent)
        // The next advertisement starts afresh.
        #expect(m.advertisementSeen(now: at(20)) == .startConnect)
        #expect(m.failedAttempts == 0)
    }

    @Test func disconnectWhileQueuedCancelsWithoutCallingBlueZ() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        #expect(m.disconnectRequested(now: at(0.1)) == .abandonConnection(failWaiters: .cancelled))
        #expect(m.phase == .discovered)
        #expect(m.wanted == false)
        // The cancelled attempt's late outcome changes nothing.
        #expect(m.connectFailed(.transient, now: at(0.2)) == .none)
        #expect(m.phase == .discovered)
    }

    @Test func disconnectWhileConnectingCancelsTheConnect() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        #expect(m.disconnectRequested(now: at(0.1)) == .disconnect(failWaiters: .cancelled))
        #expect(m.phase == .disconnecting)
        // The connect fails because we disconnected: done, no retry.
        #expect(m.connectFailed(.transient, now: at(0.2)) == .none)
        #expect(m.phase == .discovered)
        #expect(m.disconnected(now: at(0.3)) == .none)
        #expect(m.phase == .discovered)
    }

    @Test func disconnectWhileConnectingWhenTheConnectWinsAnyway() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        _ = m.disconnectRequested(now: at(0.1))
        // Connected=true arrives before our Disconnect takes effect: ignored.
        m.connectSucceeded(through: hci0, now: at(0.15))
        #expect(m.servicesResolved(now: at(0.16)) == .none)
        #expect(m.phase == .disconnecting)
        #expect(m.disconnected(now: at(0.3)) == .none)
        #expect(m.phase == .discovered)
    }

    @Test func connectRequestedWhileDisconnectingRunsAfterwards() {
        var m = readyMachine()
        #expect(m.disconnectRequested(now: at(1)) == .disconnect(failWaiters: nil))
        #expect(m.connectRequested(now: at(1.1)) == .none)
        #expect(m.phase == .disconnecting)
        #expect(m.disconnected(now: at(1.2)) == .startConnect)
        #expect(m.phase == .connecting)
    }

    @Test func requestedDisconnectFromReadyEndsDiscovered() {
        var m = readyMachine()
        _ = m.disconnectRequested(now: at(1))
        #expect(m.disconnected(now: at(1.2)) == .none)
        #expect(m.phase == .discovered)
        #expect(!m.holdsLink)
    }

    @Test func unexpectedLinkLossReconnectsAtTheNextAdvertisementAfterTheFloor() {
        // A board that lost its link (switched off, out of range) is not connected blindly:
        // that would hold the adapter's connect queue for a whole connect timeout.
        var m = readyMachine()
        #expect(m.disconnected(now: at(5)) == .abandonConnection(failWaiters: nil))
        #expect(m.phase == .absent)
        #expect(m.connectRequested(now: at(5.05)) == .failWaiters(.absent))
        let early = m.advertisementSeen(now: at(5.1))
        let delay = try! #require(retryDelay(early))
        #expect(delay >= policy.minimumDelay - .milliseconds(100))
        #expect(m.retryTimerFired(token: token(early)!, now: at(6)) == .startConnect)
        var later = readyMachine()
        _ = later.disconnected(now: at(5))
        #expect(later.advertisementSeen(now: at(7)) == .startConnect)
    }

    @Test func externallyConnectedBoardIsAdoptedAndDroppedWithoutRetry() {
        var m = machine()
        m.connectSucceeded(through: hci0, now: at(0))
        #expect(m.phase == .resolving)
        #expect(m.servicesResolved(now: at(0.1)) == .lookUpCharacteristics(link: m.link))
        #expect(m.characteristicsFound(link: m.link, now: at(0.15)) == settling(m))
        // Nobody asked for it, so a link loss does not trigger reconnects.
        #expect(m.disconnected(now: at(1)) == .abandonConnection(failWaiters: nil))
        #expect(m.phase == .discovered)
    }

    @Test func resolveFailureTearsDownThenBacksOff() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        m.connectSucceeded(through: hci0, now: at(0.1))
        #expect(m.connectFailed(.transient, now: at(10)) == .disconnect(failWaiters: nil))
        #expect(m.phase == .disconnecting)
        let action = m.disconnected(now: at(10.1))
        #expect(retryDelay(action) != nil)
        #expect(m.phase == .backingOff)
    }

    @Test func permanentResolveFailureFailsWaitersAndEndsFailed() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        m.connectSucceeded(through: hci0, now: at(0.1))
        #expect(m.connectFailed(.permanent, now: at(1)) == .disconnect(failWaiters: .failed))
        #expect(m.disconnected(now: at(1.1)) == .failWaiters(.failed))
        #expect(m.phase == .failed)
    }

    @Test func adapterOffStopsEverythingAndPowerOnResumesWantedBoards() {
        var m = readyMachine()
        #expect(m.adapterPoweredOff(now: at(1)) == .abandonConnection(failWaiters: .adapterOff))
        #expect(m.phase == .waitingForAdapter)
        // Nothing connects while off.
        #expect(m.connectRequested(now: at(2)) == .failWaiters(.adapterOff))
        #expect(m.advertisementSeen(now: at(2)) == .none)
        #expect(m.disconnected(now: at(2)) == .none)
        #expect(m.phase == .waitingForAdapter)
        #expect(m.adapterPoweredOn(now: at(3)) == .startConnect)
        #expect(m.phase == .connecting)
    }

    @Test func adapterOffWhileBackingOffCancelsTheRetry() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        let action = m.connectFailed(.transient, now: at(0))
        #expect(m.adapterPoweredOff(now: at(0.1)) == .none)
        #expect(m.retryTimerFired(token: token(action)!, now: at(2)) == .none)
        #expect(m.phase == .waitingForAdapter)
    }

    @Test func powerOnLeavesUnwantedBoardsIdleAndVanishedOnesAbsent() {
        var idle = machine(powered: false)
        #expect(idle.phase == .waitingForAdapter)
        #expect(idle.adapterPoweredOn(now: at(1)) == .none)
        #expect(idle.phase == .discovered)

        var gone = machine(powered: false)
        _ = gone.connectRequested(now: at(0))
        #expect(gone.deviceVanished(now: at(0.5)) == .none)
        #expect(gone.adapterPoweredOn(now: at(1)) == .none)
        #expect(gone.phase == .absent)
        #expect(gone.advertisementSeen(now: at(2)) == .startConnect)
    }

    @Test func deviceVanishingWhileConnectedFailsWaitersAsAbsent() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        m.connectAttemptStarted(through: hci0, now: at(0))
        m.connectSucceeded(through: hci0, now: at(0.1))
        #expect(m.deviceVanished(now: at(0.2)) == .abandonConnection(failWaiters: .absent))
        #expect(m.phase == .absent)
        #expect(m.connectFailed(.absent, now: at(0.3)) == .none)
        #expect(m.advertisementSeen(now: at(5)) == .startConnect)
    }

    @Test func forgetIsTerminal() {
        var m = readyMachine()
        #expect(m.forget(now: at(1)) == .disconnect(failWaiters: .notFound))
        #expect(m.isForgotten)
        #expect(m.connectRequested(now: at(2)) == .failWaiters(.notFound))
        #expect(m.advertisementSeen(now: at(2)) == .none)
        #expect(m.adapterPoweredOn(now: at(2)) == .none)
        #expect(m.disconnected(now: at(2)) == .none)
        #expect(m.forget(now: at(3)) == .none)

        var idle = machine()
        #expect(idle.forget(now: at(0)) == .failWaiters(.notFound))
    }

    @Test func disconnectWhileBackingOffCancelsTheRetry() {
        var m = machine()
        _ = m.connectRequested(now: at(0))
        let action = m.connectFailed(.transient, now: at(0))
        #expect(m.disconnectRequested(now: at(0.1)) == .failWaiters(.cancelled))
        #expect(m.phase == .discovered)
        #expect(m.retryTimerFired(token: token(action)!, now: at(5)) == .none)
    }
}

/// Rule violations told from a test's machine.
private final class Told: Sendable {
    private let list = Mutex<[BoardStateMachine.RuleViolation]>([])
    func add(_ violation: BoardStateMachine.RuleViolation) { list.withLock { $0.append(violation) } }
    var all: [BoardStateMachine.RuleViolation] { list.withLock { $0 } }
}
