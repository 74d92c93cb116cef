public import BlueZ
import Dispatch
import Synchronization

/// A clock that moves only when told (``advance(by:)``), for one test's fleet: as NIO's
/// `NIOAsyncTestingEventLoop`, a sleep on it returns when the test moves time past its
/// deadline, never by itself. Nothing process-wide is taken over: the tasks still run on the
/// global executor, each fleet has its own clock, and tests run side by side.
///
/// What it does not give is ``SimulationRuntime``'s one order: tasks woken at one instant run
/// concurrently. A test states what it awaits (``waitForSleepers(_:)``, an event, a value),
/// then moves time; the seeded classrooms stay `blefleet-sim`'s. Nor does it know when the
/// tasks it woke are done: ``settle(quietYields:)`` judges it by the clock and the file
/// executor, which a longer flow on the global executor can outrun (a timeout fired before
/// the answer it waited for ran). Knowing it exactly needs the fleet's tasks on an executor
/// of the test's, which FleetCore's unstructured tasks do not inherit yet.
public final class ManualClock: RadioClock {
    private struct Timer {
        let deadline: ContinuousClock.Instant
        let sequence: UInt64
        let sleeper: Sleeper
    }
    private struct State {
        var now: ContinuousClock.Instant
        var timers: [Timer] = []
        var sequence: UInt64 = 0
        /// Waiters for a number of sleepers: woken when at least that many sleep.
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// Sleeps begun, woken or cancelled so far (``settle(quietYields:)`` watches it).
        var activity: UInt64 = 0
    }
    private let state: Mutex<State>
    private let queue = QueueExecutor()

    /// The executor for an actor that blocks on file I/O (the registry, which fsyncs its
    /// saves): a Dispatch queue of its own, as in the daemon, whose work the clock waits out
    /// when it ``settle(quietYields:)``s: a save takes real time, which must not let
    /// simulated time run on without it.
    public var fileExecutor: any SerialExecutor { queue }

    /// A clock standing at `start` (an instant of the machine's clock, so instants from
    /// either compare sensibly; time stands still from there).
    public init(start: ContinuousClock.Instant = .now) {
        state = Mutex(State(now: start))
    }

    public var now: ContinuousClock.Instant { state.withLock { $0.now } }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try Task.checkCancellation()
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard sleeper.start(continuation) else { return }
                let (due, ready) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    state.activity += 1
                    if deadline <= state.now { return (true, []) }
                    state.sequence += 1
                    let timer = Timer(deadline: deadline, sequence: state.sequence, sleeper: sleeper)
                    let index = state.timers.firstIndex { ($0.deadline, $0.sequence) > (deadline, timer.sequence) } ?? state.timers.count
                    state.timers.insert(timer, at: index)
                    return (false, Self.takeWaiters(&state))
                }
                for waiter in ready { waiter.resume() }
                if due { sleeper.end(.success(())) }
            }
        } onCancel: {
            state.withLock { state in
                state.activity += 1
                state.timers.removeAll { $0.sleeper === sleeper }
            }
            sleeper.end(.failure(CancellationError()))
        }
    }

    /// Moves time forward by `duration`, waking every sleep due by then, earliest first
    /// (each woken at its own deadline: ``now`` reads that deadline while it is woken).
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    /// Moves time forward to `instant` (never back), waking every sleep due by then.
    public func advance(to instant: ContinuousClock.Instant) {
        while true {
            let due = state.withLock { state -> Sleeper? in
                guard let first = state.timers.first, first.deadline <= instant else {
                    state.now = max(state.now, instant)
                    return nil
                }
                state.timers.removeFirst()
                state.activity += 1
                state.now = max(state.now, first.deadline)
                return first.sleeper
            }
            guard let due else { return }
            due.end(.success(()))
        }
    }

    /// Returns once the tasks time moved have gone back to waiting, as far as the clock can
    /// tell: no job on ``fileExecutor``, and no sleep begun, woken or cancelled over
    /// `quietYields` turns of the caller. (The other tasks run on the global executor, which
    /// says nothing of what it runs: work that touches neither for longer is not waited for.)
    public func settle(quietYields: Int = 20) async {
        var last = state.withLock { $0.activity }
        var quiet = 0
        while quiet < quietYields {
            await Task.yield()
            let now = state.withLock { $0.activity }
            if now != last || queue.busy { (last, quiet) = (now, 0) } else { quiet += 1 }
        }
    }

    /// Returns once at least `count` sleeps wait on the clock (a test's way to know the
    /// code under test reached its waits before it moves time).
    public func waitForSleepers(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.timers.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    private static func takeWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.timers.count
        let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
        state.waiters.removeAll { $0.count <= count }
        return ready
    }
}

/// A serial executor on a Dispatch queue of its own that knows whether it has work.
private final class QueueExecutor: SerialExecutor {
    private let queue = DispatchQueue(label: "blefleet.manual-clock.files")
    private let jobs = Atomic<Int>(0)

    var busy: Bool { jobs.load(ordering: .acquiring) > 0 }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        jobs.add(1, ordering: .releasing)
        queue.async {
            job.runSynchronously(on: executor)
            self.jobs.subtract(1, ordering: .releasing)
        }
    }
}
