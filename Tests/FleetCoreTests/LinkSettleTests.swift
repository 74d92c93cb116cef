import FleetCore
import Testing

@testable import FleetSimulation

/// A link that falls within ``BoardStateMachine/settleTime`` of coming up is a failed connect
/// (it came up and fell: the board's streak of failures goes on, and its retry backs off); one
/// that lasted it is a board gone, no failure. On a fleet of its own clock, moved by the test:
/// the settle time costs no wall time (the end-to-end RadioFaultTests wait it out, 3.2 s a
/// time, on the lanes' real bluetoothd).
@Suite(.timeLimit(.minutes(1))) struct LinkSettleTests {
    @Test func aLinkLostWithinTheSettleTimeIsAFailedConnectOneThatLastedABoardGone() async throws {
        try await ManualFleet.with(boards: 2) { sim in
            let (board, other) = (sim.boards[0], sim.boards[1])
            try await sim.waitUntilAllReady()
            // Its link lasts the settle time, then falls (it leaves the room): a board gone.
            await sim.advance(by: BoardStateMachine.settleTime)
            await sim.radio.apply(.boardLeaves(board, adapter: 0))
            try await sim.advance(until: "\(board) lost its link", within: .seconds(5)) { await sim.snapshot(board)?.phase != .ready }
            let gone = await sim.describe()
            #expect(await sim.snapshot(board)?.lastFailure == nil, "a link that lasted is no failed connect: \(gone)")

            // Back in range it is connected again; this link falls at once: a failed connect.
            await sim.radio.apply(.boardReturns(board, adapter: 0))
            try await sim.waitUntilAllReady()
            let readyAgain = sim.clock.now
            await sim.radio.apply(.boardLeaves(board, adapter: 0))
            try await sim.advance(until: "\(board) lost its link again", within: .seconds(5)) { await sim.snapshot(board)?.phase != .ready }
            #expect(sim.clock.since(readyAgain) < BoardStateMachine.settleTime)
            let failed = await sim.describe()
            #expect(await sim.snapshot(board)?.lastFailure == .transient, "a link that fell at once is a failed connect: \(failed)")

            // The other board kept its link throughout.
            #expect(await sim.snapshot(other)?.phase == .ready)
            #expect(await sim.snapshot(other)?.lastFailure == nil)
            #expect(sim.radio.connects(of: other) == 1, "\(other) was connected \(sim.radio.connects(of: other)) times")
            #expect(sim.radio.violations.isEmpty, "\(sim.radio.violations)")

            // Back again, it is ready after its backoff.
            await sim.radio.apply(.boardReturns(board, adapter: 0))
            try await sim.waitUntilAllReady()
        }
    }
}
