import Testing

@testable import FleetRPCServer

/// The server's life without a socket: `Socket` is a name, `Waiter` a number.
@Suite struct RPCServerStateMachineTests {
    typealias Machine = RPCServer.StateMachine<String, Int>

    /// A server whose socket "s" is bound.
    func bound() -> Machine {
        var machine = Machine()
        #expect(machine.bind() == .create)
        #expect(machine.socketCreated("s") == .keep)
        return machine
    }

    /// A server serving on socket "s".
    func serving() -> Machine {
        var machine = bound()
        #expect(machine.run() == .serve("s"))
        return machine
    }

    @Test func bindingTwiceIsANoOp() {
        var machine = Machine()
        #expect(machine.bind() == .create)
        // A second bind while the first is still creating the socket does not create another.
        #expect(machine.bind() == .none)
        #expect(machine.socketCreated("s") == .keep)
        #expect(machine.bind() == .none)
        #expect(machine.run() == .serve("s"))
        #expect(machine.bind() == .none)
    }

    @Test func aFailedBindCanBeRetried() {
        var machine = Machine()
        #expect(machine.bind() == .create)
        machine.bindFailed()
        #expect(machine.bind() == .create)
        #expect(machine.socketCreated("s") == .keep)
        #expect(machine.run() == .serve("s"))
    }

    @Test func runTwiceIsRefusedWithAClearError() {
        var machine = serving()
        guard case .refuse(let error) = machine.run() else {
            Issue.record("a second run() was not refused")
            return
        }
        #expect(error.description == "The server's socket is already being served by another run().")
        // Still refused while the first run drains.
        _ = machine.triggerGracefulShutdown()
        #expect(machine.run() == .refuse(.alreadyServing))
    }

    @Test func runWhileBindIsStillCreatingTheSocketIsRefused() {
        var machine = Machine()
        #expect(machine.bind() == .create)
        guard case .refuse(let error) = machine.run() else {
            Issue.record("run() during bind() was not refused")
            return
        }
        #expect(error.description.contains("still being created by bind()"))
        // The bind goes on and the server then runs.
        #expect(machine.socketCreated("s") == .keep)
        #expect(machine.run() == .serve("s"))
    }

    @Test func aServerRunsOnce() {
        var machine = serving()
        #expect(machine.triggerGracefulShutdown() == .quiesce("s"))
        #expect(machine.waitForDrain(1) == .resume)
        machine.runEnded()
        guard case .stopped = machine.state else {
            Issue.record("not stopped: \(machine.state)")
            return
        }
        guard case .refuse(let error) = machine.run() else {
            Issue.record("run() after the server stopped was not refused")
            return
        }
        #expect(error.description.contains("a server runs once"))
        #expect(machine.bind() == .refuse(.stopped))
    }

    @Test func connectionsGetDistinctIdsAndAreCounted() {
        var machine = serving()
        #expect(machine.connectionCount == 0)
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 64) == .serve(connectionID: 1))
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 64) == .serve(connectionID: 2))
        #expect(machine.connectionCount == 2)
        #expect(machine.connectionClosed(uid: 1000) == .none)
        #expect(machine.connectionCount == 1)
        // Ids are not reused after a connection closes.
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 64) == .serve(connectionID: 3))
        #expect(machine.connectionCount == 2)
    }

    @Test func aUserHasAtMostItsLimitOfConnectionsAndRootHasNone() {
        var machine = serving()
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 2) == .serve(connectionID: 1))
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 2) == .serve(connectionID: 2))
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 2) == .refuse(limit: 2))
        // Another user is not held up by the first; root is never refused.
        #expect(machine.connectionAccepted(uid: 1001, perUserLimit: 2) == .serve(connectionID: 3))
        for id in 4...6 { #expect(machine.connectionAccepted(uid: 0, perUserLimit: 2) == .serve(connectionID: UInt64(id))) }
        #expect(machine.connectionCount == 6)
        // One closes: the user may open one again.
        #expect(machine.connectionClosed(uid: 1000) == .none)
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 2) == .serve(connectionID: 7))
    }

    @Test func allUsersTogetherHaveAtMostTheServersLimitAndRootIsNotHeldBack() {
        var machine = serving()
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 64, totalLimit: 3) == .serve(connectionID: 1))
        #expect(machine.connectionAccepted(uid: 1001, perUserLimit: 64, totalLimit: 3) == .serve(connectionID: 2))
        #expect(machine.connectionAccepted(uid: 0, perUserLimit: 64, totalLimit: 3) == .serve(connectionID: 3))
        // Full: a user who has none open yet is refused all the same, root is not.
        #expect(machine.connectionAccepted(uid: 1002, perUserLimit: 64, totalLimit: 3) == .refuseFull(limit: 3))
        #expect(machine.connectionAccepted(uid: 0, perUserLimit: 64, totalLimit: 3) == .serve(connectionID: 4))
        #expect(machine.connectionCount == 4)
        // The server's limit is told before the user's, when both are reached.
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 1, totalLimit: 3) == .refuseFull(limit: 3))
        #expect(machine.connectionClosed(uid: 0) == .none)
        #expect(machine.connectionClosed(uid: 0) == .none)
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 1, totalLimit: 3) == .refuse(limit: 1))
        #expect(machine.connectionAccepted(uid: 1002, perUserLimit: 1, totalLimit: 3) == .serve(connectionID: 5))
    }

    @Test func aConnectionAcceptedWhileDrainingIsClosedUnserved() {
        var machine = serving()
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 64) == .serve(connectionID: 1))
        #expect(machine.triggerGracefulShutdown() == .quiesce("s"))
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 64) == .close)
        // Not counted: the drain does not wait for it.
        #expect(machine.connectionCount == 1)
    }

    @Test func theDrainWaitsForEveryConnectionWithCallsInFlightThenEnds() {
        var machine = serving()
        _ = machine.connectionAccepted(uid: 1000, perUserLimit: 64)
        _ = machine.connectionAccepted(uid: 1000, perUserLimit: 64)
        #expect(machine.triggerGracefulShutdown() == .quiesce("s"))
        #expect(machine.waitForDrain(7) == .wait)
        // One connection's calls answered: the other still has calls in flight.
        #expect(machine.connectionClosed(uid: 1000) == .none)
        #expect(machine.connectionCount == 1)
        // The last one: the waiter is woken, once.
        #expect(machine.connectionClosed(uid: 1000) == .resume([7]))
        #expect(machine.connectionCount == 0)
        machine.runEnded()
        guard case .stopped = machine.state else {
            Issue.record("not stopped: \(machine.state)")
            return
        }
    }

    @Test func aDrainWithNothingOpenEndsAtOnce() {
        var machine = serving()
        _ = machine.connectionAccepted(uid: 1000, perUserLimit: 64)
        #expect(machine.connectionClosed(uid: 1000) == .none)
        #expect(machine.triggerGracefulShutdown() == .quiesce("s"))
        #expect(machine.waitForDrain(1) == .resume)
    }

    @Test func afterTheGracePeriodNobodyWaitsForCallsBeingCancelled() {
        var machine = serving()
        _ = machine.connectionAccepted(uid: 1000, perUserLimit: 64)
        #expect(machine.triggerGracefulShutdown() == .quiesce("s"))
        #expect(machine.waitForDrain(1) == .wait)
        #expect(machine.gracePeriodEnded() == [1])
        // A waiter that comes only now is not parked for calls being cancelled.
        #expect(machine.waitForDrain(2) == .resume)
        // The connection still counts until its cancelled calls are gone, and wakes nobody.
        #expect(machine.connectionCount == 1)
        #expect(machine.connectionClosed(uid: 1000) == .none)
        #expect(machine.connectionCount == 0)
        machine.runEnded()
        #expect(machine.run() == .refuse(.stopped))
    }

    @Test func shutdownTwiceIsANoOp() {
        var machine = serving()
        #expect(machine.triggerGracefulShutdown() == .quiesce("s"))
        #expect(machine.triggerGracefulShutdown() == .none)
    }

    @Test func shutdownOfABoundServerClosesItsSocketAndRunReturnsAtOnce() {
        var machine = bound()
        #expect(machine.triggerGracefulShutdown() == .close("s"))
        #expect(machine.run() == .returnAtOnce)
        #expect(machine.bind() == .none)
        #expect(machine.connectionAccepted(uid: 1000, perUserLimit: 64) == .close)
    }

    @Test func shutdownWhileBindingClosesTheSocketOnceItIsMade() {
        var machine = Machine()
        #expect(machine.bind() == .create)
        #expect(machine.triggerGracefulShutdown() == .none)
        #expect(machine.socketCreated("s") == .close("s"))
        #expect(machine.run() == .returnAtOnce)
    }

    @Test func shutdownBeforeBindingLeavesNothingToBindOrServe() {
        var machine = Machine()
        #expect(machine.triggerGracefulShutdown() == .none)
        #expect(machine.bind() == .none)
        #expect(machine.run() == .returnAtOnce)
    }
}
