import FleetSimulation
import Foundation
import Testing

@testable import FleetCore

@Suite(.timeLimit(.minutes(1))) struct FanOutTests {
    func boards(_ count: Int) -> [BoardIdentity] {
        (1...count).map { BoardIdentity(address: BoardAddress(String(format: "02:00:00:00:00:%02X", $0))!, name: "nano-\($0)") }
    }

    @Test func oneOutcomePerBoardInOrder() async {
        let clock = ManualClock()
        let running = Task {
            await FanOut.run(boards(5), timeout: .seconds(30), clock: clock) { board in
                // Finish in reverse order to show the order of outcomes is the order given.
                try await clock.sleep(for: .milliseconds(5 * (6 - Int(board.address.rawValue.suffix(2))!)))
                return board.name!
            }
        }
        // Five boards and the deadline asleep; the boards woken, last first, the deadline not.
        await clock.waitForSleepers(6)
        clock.advance(by: .milliseconds(25))
        let result = await running.value
        #expect(result.outcomes.map(\.value) == (1...5).map { "nano-\($0)" })
        #expect(result.outcomes.map(\.address) == boards(5).map(\.address))
        #expect(result.succeededCount == 5)
    }

    @Test func errorsMapToStableCodes() async {
        struct Weird: Error, CustomStringConvertible { var description: String { "weird thing" } }
        let result = await FanOut.run(boards(3), timeout: .seconds(30)) { board -> Int in
            switch board.name {
            case "nano-1": throw FleetError(.gattError, "Write failed.")
            case "nano-2": throw Weird()
            default: return 1
            }
        }
        #expect(result.outcomes.map { $0.error?.code } == [.gattError, .failed, nil])
        #expect(result.outcomes[1].error?.message == "weird thing")
    }

    @Test func slowBoardTimesOutWithoutDelayingTheOthers() async {
        // The slow board ignores cancellation and is only released after run returns, so the
        // test proves run does not wait for it.
        let (gate, open) = AsyncStream<Void>.makeStream()
        let result = await FanOut.run(boards(3), timeout: .seconds(1)) { board -> String in
            if board.name == "nano-2" {
                for await _ in gate {}
                return "late"
            }
            return "ok"
        }
        open.finish()
        #expect(result.outcomes.map { $0.value } == ["ok", nil, "ok"])
        let timeout = result.outcomes[1]
        #expect(timeout.error == FleetError(.timeout, "The board did not answer within 1000 ms."))
        #expect(timeout.error?.retryable == true)
        #expect(timeout.latency >= .milliseconds(900))
        #expect(result.outcomes[0].latency < timeout.latency)
    }

    @Test func boardsUnfinishedAtTheDeadlineAreToldWhy() async {
        let targets = boards(3)
        let (gate, open) = AsyncStream<Void>.makeStream()
        defer { open.finish() }
        let result = await FanOut.run(
            targets, timeout: .milliseconds(300),
            unfinished: { unfinished in
                // Given all unfinished boards at once; one of them is explained.
                #expect(unfinished.map(\.name) == ["nano-2", "nano-3"])
                return [unfinished[0].address: FleetError(.timeout, "Still waiting for a connection slot.")]
            }
        ) { board -> Int in
            // The others answer only when cancelled (at the deadline).
            if board.name != "nano-1" { for await _ in gate {} }
            return 1
        }
        #expect(result.outcomes.map { $0.error?.code } == [nil, .timeout, .timeout])
        #expect(result.outcomes[1].error?.message == "Still waiting for a connection slot.")
        #expect(result.outcomes[2].error?.message == "The board did not answer within 300 ms.")
    }

    @Test func pastDeadlineTimesOutWithoutRunning() async {
        let result = await FanOut.run(boards(2), timeout: .seconds(-1)) { _ -> Int in
            Issue.record("ran after the deadline")
            return 0
        }
        #expect(result.outcomes.map { $0.error?.code } == [.timeout, .timeout])
    }

    @Test func callerCancellationReportsCancelled() async {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let (started, didStart) = AsyncStream<Void>.makeStream()
        let task = Task {
            await FanOut.run(boards(1), timeout: .seconds(30)) { _ -> Int in
                didStart.yield()
                for await _ in gate {}
                return 1
            }
        }
        var iterator = started.makeAsyncIterator()
        await iterator.next()
        task.cancel()
        let result = await task.value
        open.finish()
        #expect(result.outcomes.first?.error?.code == .cancelled)
    }

    @Test func emptySelectionIsEmpty() async {
        let result = await FanOut.run([], timeout: .seconds(1)) { _ in 1 }
        #expect(result.outcomes.isEmpty)
    }
}
