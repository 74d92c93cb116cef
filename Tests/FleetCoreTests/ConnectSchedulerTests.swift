import Synchronization
import TestSupport
import Testing

@testable import FleetCore

@Suite(.timeLimit(.minutes(1))) struct ConnectSchedulerTests {
    @Test func atMostOneOperationRunsAtATime() async throws {
        let scheduler = ConnectScheduler(limit: 1)
        let running = Locked(0)
        let maximum = Locked(0)
        let completed = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await scheduler.withPermit {
                        let now = running.withLock { $0 += 1; return $0 }
                        maximum.withLock { $0 = max($0, now) }
                        // Stay inside long enough for others to try to enter.
                        for _ in 0..<20 { await Task.yield() }
                        try await Task.sleep(for: .microseconds(200))
                        running.withLock { $0 -= 1 }
                        completed.withLock { $0 += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(maximum.withLock { $0 } == 1)
        #expect(completed.withLock { $0 } == 20)
        #expect(scheduler.runningCount == 0)
        #expect(scheduler.waitingCount == 0)
    }

    @Test func limitAboveOneAllowsThatMany() async throws {
        let scheduler = ConnectScheduler(limit: 3)
        try await scheduler.acquire()
        try await scheduler.acquire()
        try await scheduler.acquire()
        #expect(scheduler.runningCount == 3)
        let fourth = Task { try await scheduler.acquire() }
        try await eventually("the fourth caller waits") { scheduler.waitingCount == 1 }
        scheduler.release()
        try await fourth.value
        #expect(scheduler.runningCount == 3)
        for _ in 0..<3 { scheduler.release() }
        #expect(scheduler.runningCount == 0)
    }

    @Test func waitersAreAdmittedInFIFOOrder() async throws {
        let scheduler = ConnectScheduler()
        try await scheduler.acquire()
        let order = Locked<[Int]>([])
        var tasks: [Task<Void, any Error>] = []
        for i in 0..<5 {
            tasks.append(Task {
                try await scheduler.withPermit { order.withLock { $0.append(i) } }
            })
            // Make sure waiter i is queued before waiter i+1 arrives.
            try await eventually("waiter \(i) is queued") { scheduler.waitingCount == i + 1 }
        }
        scheduler.release()
        for task in tasks { try await task.value }
        #expect(order.withLock { $0 } == [0, 1, 2, 3, 4])
    }

    @Test func cancelledWaiterLeavesTheQueueAndThrows() async throws {
        let scheduler = ConnectScheduler()
        try await scheduler.acquire()
        let ran = Locked(false)
        let cancelled = Task {
            try await scheduler.withPermit { ran.withLock { $0 = true } }
        }
        let after = Task { try await scheduler.withPermit { 42 } }
        try await eventually("both wait") { scheduler.waitingCount == 2 }
        cancelled.cancel()
        let watchdog = Watchdog { scheduler.release() }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(!watchdog.stop(), "the cancelled waiter did not leave the queue")
        #expect(scheduler.waitingCount == 1)
        scheduler.release()
        // The next waiter gets the permit; the cancelled one never ran.
        #expect(try await after.value == 42)
        #expect(ran.withLock { $0 } == false)
        #expect(scheduler.runningCount == 0)
    }

    @Test func alreadyCancelledTaskDoesNotTakeAPermit() async throws {
        let scheduler = ConnectScheduler()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await scheduler.acquire()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(scheduler.runningCount == 0)
        try await scheduler.acquire()
        #expect(scheduler.runningCount == 1)
        scheduler.release()
    }

    @Test func bodyErrorReleasesThePermit() async throws {
        struct Boom: Error {}
        let scheduler = ConnectScheduler()
        await #expect(throws: Boom.self) { try await scheduler.withPermit { throw Boom() } }
        #expect(scheduler.runningCount == 0)
    }
}

/// A lock-protected value tasks can share in tests.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
