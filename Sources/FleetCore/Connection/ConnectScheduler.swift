import Synchronization

/// Lets at most `limit` connect operations run at once (1 per adapter: parallel `Connect`
/// calls on one controller are fragile), admitting waiters in FIFO order.
///
/// A waiter whose task is cancelled leaves the queue and throws `CancellationError`.
public final class ConnectScheduler: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var available: Int
        var queue: [Waiter] = []
        var nextID: UInt64 = 0
        /// Waiters cancelled before they were enqueued.
        var cancelledEarly: Set<UInt64> = []
    }

    /// The maximum number of concurrent operations.
    public let limit: Int
    private let state: Mutex<State>

    /// - Parameter limit: concurrent operations allowed (at least 1).
    public init(limit: Int = 1) {
        self.limit = max(1, limit)
        state = Mutex(State(available: max(1, limit)))
    }

    /// Number of callers waiting for a permit.
    public var waitingCount: Int { state.withLock { $0.queue.count } }

    /// Number of operations running now.
    public var runningCount: Int { state.withLock { limit - $0.available } }

    /// Waits for a permit (FIFO), runs `body`, releases the permit.
    /// Throws `CancellationError` if cancelled while waiting (`body` does not run).
    public func withPermit<T: Sendable>(
        _ body: () async throws -> T
    ) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }

    /// Waits for a permit. Pair every successful call with ``release()``.
    public func acquire() async throws {
        try Task.checkCancellation()
        let id: UInt64? = state.withLock { state in
            if state.available > 0 && state.queue.isEmpty {
                state.available -= 1
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = state.withLock { state -> Bool in
                    if state.cancelledEarly.remove(id) != nil { return true }
                    // A permit may have been released between the two locks.
                    if state.available > 0 && state.queue.isEmpty {
                        state.available -= 1
                        continuation.resume()
                        return false
                    }
                    state.queue.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let index = state.queue.firstIndex(where: { $0.id == id }) {
                    return state.queue.remove(at: index)
                }
                state.cancelledEarly.insert(id)
                return nil
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
        // If the waiter was granted before it was cancelled, it owns a permit: fine. If it
        // was admitted without ever being queued, drop any stale early-cancel mark.
        _ = state.withLock { $0.cancelledEarly.remove(id) }
    }

    /// Returns a permit, admitting the next waiter if any.
    public func release() {
        let next = state.withLock { state -> Waiter? in
            if state.queue.isEmpty {
                state.available = min(state.available + 1, limit)
                return nil
            }
            return state.queue.removeFirst()
        }
        next?.continuation.resume()
    }
}
