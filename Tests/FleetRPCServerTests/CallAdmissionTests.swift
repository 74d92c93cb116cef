import JSONRPC
import Testing

@testable import FleetRPCServer

@Suite struct CallAdmissionTests {
    @Test func callsBeyondTheLimitAreRefusedAsBusyUntilOneFinishes() {
        var admission = CallAdmission(limit: 2)
        #expect(admission.admit() == .init(admitted: 1, refusal: nil))
        #expect(admission.admit() == .init(admitted: 1, refusal: nil))
        let third = admission.admit()
        #expect(third.admitted == 0)
        let busy = try? #require(third.refusal)
        #expect(busy?.code == -32004)
        #expect(
            busy?.message
                == "Busy: this connection already has 2 calls in flight (max-calls-per-client), a batch's every item "
                + "counting as one; wait for replies or use another connection.")
        // A refused call took no place.
        #expect(admission.inFlight == 2)
        admission.finished()
        #expect(admission.admit().admitted == 1)
        #expect(admission.inFlight == 2)
    }

    /// A batch is as many calls as it has items: its first items take the places left, the
    /// rest are refused (issue 50: a batch of 2,000 counted once).
    @Test func aBatchsItemsEachTakeAPlace() {
        var admission = CallAdmission(limit: 64)
        #expect(admission.admit(60).admitted == 60)
        let batch = admission.admit(2000)
        #expect(batch.admitted == 4)
        #expect(batch.refusal?.code == -32004)
        #expect(admission.inFlight == 64)
        #expect(admission.admit(1).admitted == 0)
        admission.finished(60)
        #expect(admission.admit(10) == .init(admitted: 10, refusal: nil))
        #expect(admission.inFlight == 14)
    }
}

@Suite struct CallQuotaTests {
    @Test func oneUserHasAtMostItsLimitOnAllItsConnectionsAndRootHasNone() {
        var quota = CallQuota(perUserLimit: 3, totalLimit: 100, reservedForControl: 0)
        // Two connections of uid 1000: the second gets what is left of the user's places.
        #expect(quota.take(2, uid: 1000, role: .readOnly).admitted == 2)
        let second = quota.take(2, uid: 1000, role: .readOnly)
        #expect(second.admitted == 1)
        #expect(
            second.refusal?.message
                == "Busy: uid 1000 has 3 calls in flight on its connections, the most one user may (max-calls-per-user); wait for replies.")
        #expect(second.refusal?.code == -32004)
        // Another user is not held up; root is never held by a user's limit.
        #expect(quota.take(3, uid: 1001, role: .control).admitted == 3)
        #expect(quota.take(50, uid: 0, role: .control).admitted == 50)
        #expect(quota.inFlight == 56)
        quota.give(3, uid: 1000)
        #expect(quota.inFlight(of: 1000) == 0)
        #expect(quota.take(3, uid: 1000, role: .readOnly).admitted == 3)
    }

    /// Read-only callers cannot fill the daemon: the reserve stays for control users, who
    /// are refused only when every place is taken.
    @Test func readOnlyCallersLeaveTheReserveToControlUsers() {
        var quota = CallQuota(perUserLimit: 1000, totalLimit: 10, reservedForControl: 4)
        #expect(quota.readOnlyLimit == 6)
        #expect(quota.take(4, uid: 1000, role: .readOnly).admitted == 4)
        let greedy = quota.take(5, uid: 1001, role: .readOnly)
        #expect(greedy.admitted == 2)
        #expect(
            greedy.refusal?.message
                == "Busy: blefleetd has 6 calls in flight, all it runs for read-only callers; the other 4 are kept for "
                + "control users (reserved-control-calls). Try again shortly.")
        #expect(quota.take(1, uid: 1002, role: .readOnly).admitted == 0)
        // The teacher still gets in, up to the daemon's whole limit.
        #expect(quota.take(3, uid: 1003, role: .control) == .init(admitted: 3, refusal: nil))
        let full = quota.take(2, uid: 0, role: .control)
        #expect(full.admitted == 1)
        #expect(
            full.refusal?.message
                == "Busy: blefleetd has 10 calls in flight, the most it runs at once (max-calls-in-flight); try again when some have answered.")
        // Places given back by control calls do not reopen the door to readers while the
        // read-only share is still used.
        quota.give(3, uid: 1003)
        #expect(quota.take(1, uid: 1002, role: .readOnly).admitted == 0)
        quota.give(4, uid: 1000)
        #expect(quota.take(1, uid: 1002, role: .readOnly).admitted == 1)
    }

    @Test func aReserveOfTheWholeLimitStillLeavesReadersOnePlace() {
        let quota = CallQuota(perUserLimit: 10, totalLimit: 8, reservedForControl: 100)
        #expect(quota.readOnlyLimit == 1)
    }
}

@Suite struct IdleClockTests {
    let start = ContinuousClock.now

    @Test func aSilentConnectionThatHoldsNothingIsClosedAfterTheTimeout() {
        let clock = IdleClock(timeout: .seconds(300), now: start)
        #expect(
            clock.timerFired(at: start, callsInFlight: 0, holdsSomething: false) == .check(at: start.advanced(by: .seconds(300))))
        #expect(
            clock.timerFired(at: start.advanced(by: .seconds(299)), callsInFlight: 0, holdsSomething: false)
                == .check(at: start.advanced(by: .seconds(300))))
        #expect(clock.timerFired(at: start.advanced(by: .seconds(300)), callsInFlight: 0, holdsSomething: false) == .close)
    }

    @Test func activityMovesTheDeadline() {
        var clock = IdleClock(timeout: .seconds(10), now: start)
        clock.active(at: start.advanced(by: .seconds(8)))
        // An earlier instant (a reply written on another thread, seen late) moves nothing back.
        clock.active(at: start.advanced(by: .seconds(2)))
        #expect(
            clock.timerFired(at: start.advanced(by: .seconds(10)), callsInFlight: 0, holdsSomething: false)
                == .check(at: start.advanced(by: .seconds(18))))
        #expect(clock.timerFired(at: start.advanced(by: .seconds(18)), callsInFlight: 0, holdsSomething: false) == .close)
    }

    @Test func aConnectionWithACallInFlightOrAHoldIsNeverIdle() {
        let clock = IdleClock(timeout: .seconds(10), now: start)
        let late = start.advanced(by: .seconds(3600))
        #expect(clock.timerFired(at: late, callsInFlight: 1, holdsSomething: false) == .check(at: late.advanced(by: .seconds(10))))
        #expect(clock.timerFired(at: late, callsInFlight: 0, holdsSomething: true) == .check(at: late.advanced(by: .seconds(10))))
        #expect(clock.timerFired(at: late, callsInFlight: 0, holdsSomething: false) == .close)
    }
}
