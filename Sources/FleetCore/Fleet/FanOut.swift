package import BlueZ
/// Runs one operation on many boards concurrently under a single deadline.
public enum FanOut {
    /// Runs `operation` for every board at once and returns one outcome per board, in the
    /// order given, no later than `timeout` from now (plus scheduling slack).
    ///
    /// Errors map to codes: a thrown ``FleetError`` is kept; a board still running at the
    /// deadline gets ``FleetErrorCode/timeout`` (saying the `timeout` given) and its task is
    /// cancelled (its late result is discarded, so an operation that ignores cancellation
    /// cannot delay the reply); if the caller is cancelled, unfinished boards get
    /// ``FleetErrorCode/cancelled``; any other error becomes ``FleetErrorCode/failed`` with
    /// its description.
    /// `unfinished`, when given, says why boards still running at the deadline did not
    /// finish (given all of them at once); nil keeps the plain timeout.
    public static func run<Value: Sendable>(
        _ boards: [BoardIdentity],
        timeout: Duration,
        unfinished: (@Sendable ([BoardIdentity]) -> [BoardAddress: FleetError])? = nil,
        operation: @escaping @Sendable (BoardIdentity) async throws -> Value
    ) async -> FleetResult<Value> {
        await run(boards, timeout: timeout, clock: MachineClock(), unfinished: unfinished, operation: operation)
    }

    /// As ``run(_:timeout:unfinished:operation:)``, on the radio's clock.
    package static func run<Value: Sendable>(
        _ boards: [BoardIdentity],
        timeout: Duration,
        clock: any RadioClock,
        unfinished: (@Sendable ([BoardIdentity]) -> [BoardAddress: FleetError])? = nil,
        operation: @escaping @Sendable (BoardIdentity) async throws -> Value
    ) async -> FleetResult<Value> {
        let start = clock.now
        let deadline = start + timeout
        guard !boards.isEmpty else { return FleetResult(outcomes: []) }
        guard timeout > .zero else {
            return FleetResult(outcomes: boards.map {
                BoardOutcome(address: $0.address, name: $0.name, result: .failure(timeoutError(timeout)), latency: .zero)
            })
        }

        let (messages, continuation) = AsyncStream<FanOutMessage<Value>>.makeStream()
        var tasks: [Task<Void, Never>] = []
        for (index, board) in boards.enumerated() {
            tasks.append(Task {
                let result: Result<Value, FleetError>
                do {
                    result = .success(try await operation(board))
                } catch let error as FleetError {
                    result = .failure(error)
                } catch is CancellationError {
                    result = .failure(FleetError(.cancelled, "The operation was cancelled."))
                } catch {
                    result = .failure(FleetError(.failed, "\(error)"))
                }
                continuation.yield(.finished(index, result, start.duration(to: clock.now)))
            })
        }
        let timer = Task {
            if (try? await clock.sleep(until: deadline)) != nil { continuation.yield(.deadline) }
        }

        var results = [(Result<Value, FleetError>, Duration)?](repeating: nil, count: boards.count)
        var remaining = boards.count
        var timedOut = false
        await withTaskCancellationHandler {
            for await message in messages {
                switch message {
                case .finished(let index, let result, let latency):
                    results[index] = (result, latency)
                    remaining -= 1
                case .deadline:
                    timedOut = true
                }
                if remaining == 0 || timedOut { break }
            }
        } onCancel: {
            continuation.finish()
        }
        continuation.finish()
        timer.cancel()
        for task in tasks { task.cancel() }

        let end = start.duration(to: clock.now)
        let missing = timedOut
            ? timeoutError(timeout)
            : FleetError(.cancelled, "The command was cancelled before this board answered.")
        let explained = timedOut
            ? unfinished?(boards.indices.filter { results[$0] == nil }.map { boards[$0] }) ?? [:] : [:]
        let outcomes = boards.enumerated().map { index, board in
            let (result, latency) = results[index] ?? (.failure(explained[board.address] ?? missing), end)
            return BoardOutcome(address: board.address, name: board.name, result: result, latency: latency)
        }
        return FleetResult(outcomes: outcomes)
    }

    private static func timeoutError(_ timeout: Duration) -> FleetError {
        let ms = Int(max(0, (timeout.seconds * 1000).rounded()))
        return FleetError(.timeout, "The board did not answer within \(ms) ms.")
    }
}

/// What the per-board tasks and the deadline timer tell ``FanOut/run(_:timeout:unfinished:operation:)``.
private enum FanOutMessage<Value: Sendable>: Sendable {
    case finished(Int, Result<Value, FleetError>, Duration)
    case deadline
}
