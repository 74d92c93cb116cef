public import BlueZ
import Glibc
import Synchronization

/// Runs Swift concurrency on one thread, in one order, on a clock that moves only when
/// nothing else can run: the simulation's determinism.
///
/// While installed, every job the runtime would give its global executor (every task, every
/// default actor's turn) goes to this runtime's queue instead (the runtime's
/// `swift_task_enqueueGlobal_hook`), and ``run(until:_:)`` runs them one at a time, first in
/// first out, on the calling thread, as the global executor runs them: on no actor (the
/// generic executor), so nonisolated async code goes on in the job it is in, as in the
/// daemon. When the queue is empty the clock jumps to the earliest sleeper's deadline and
/// wakes it. Nothing else decides the order, so a schedule run twice
/// from the same seed takes the same steps. A job that arrives from another thread (a real
/// sleep or some I/O that escaped the simulated clock) is counted: the run is then not
/// replayable, and says so.
///
/// One per process (the hook is the process's): a simulation is its own executable.
public final class SimulationRuntime: Sendable {
    public static let shared = SimulationRuntime()

    private struct Timer {
        let deadline: Duration
        let sequence: UInt64
        let sleeper: Sleeper
    }
    /// A job and whether it is isolated to ``serialExecutor`` (else it came for the global
    /// executor).
    private struct Queued {
        let job: UnownedJob
        let onSerialExecutor: Bool
    }
    private struct State {
        var jobs: [Queued] = []
        var head = 0
        /// Sleepers by deadline, then by the order they went to sleep (``earlier``).
        var timers: [Timer] = []
        var now: Duration = .zero
        var sequence: UInt64 = 0
    }
    private let state = Mutex(State())
    /// The instant the simulated clock counts from.
    let origin = ContinuousClock.now
    private let thread = Mutex<pthread_t?>(nil)
    private let foreign = Atomic<Int>(0)
    private let executor = StepExecutor()

    private init() {}

    /// An executor for actors that would run on a queue of their own (the registry): here
    /// they run on the simulation's thread, in its order.
    public var serialExecutor: any SerialExecutor { executor }

    /// The simulated clock.
    public var clock: SimulatedClock { SimulatedClock(runtime: self) }

    /// Virtual time since the runtime was made.
    public var elapsed: Duration { state.withLock { $0.now } }

    /// Jobs that came from another thread since the runtime was installed.
    public var foreignJobs: Int { foreign.load(ordering: .relaxed) }

    /// Takes over the global executor of this process (once; before any task is made).
    public func install() {
        thread.withLock { $0 = pthread_self() }
        typealias Original = @convention(thin) (UnownedJob) -> Void
        typealias Hook = @convention(thin) (UnownedJob, Original) -> Void
        let hook: Hook = { job, _ in SimulationRuntime.shared.enqueue(job, onSerialExecutor: false) }
        guard let symbol = dlsym(nil, "swift_task_enqueueGlobal_hook") else {
            fatalError("this Swift runtime has no swift_task_enqueueGlobal_hook: the simulation cannot run")
        }
        symbol.assumingMemoryBound(to: Hook?.self).pointee = hook
    }

    func enqueue(_ job: UnownedJob, onSerialExecutor: Bool) {
        let here = pthread_self()
        if let owner = thread.withLock({ $0 }), pthread_equal(owner, here) == 0 {
            foreign.add(1, ordering: .relaxed)
        }
        state.withLock { $0.jobs.append(Queued(job: job, onSerialExecutor: onSerialExecutor)) }
    }

    /// How a run ended.
    public enum Ending: Sendable, Equatable {
        /// `body` returned.
        case finished
        /// Virtual time reached `limit` first.
        case timeLimit
        /// Nothing could run and nobody slept: every task waits for something that will
        /// never happen.
        case stalled
        /// Jobs ran on and on without the clock moving (a loop that never waits): stopped
        /// after `steps` jobs at one instant.
        case livelock(at: Duration)
    }

    /// Runs `body` in a task of its own, and every job it leads to, until it returns or
    /// virtual time passes `limit` from now. Then the tasks left are woken (their sleeps
    /// cancelled) and run out, so nothing of this run reaches the next. Returns how it
    /// ended and how many jobs ran.
    public func run(until limit: Duration, _ body: @escaping @Sendable () async -> Void) -> (ending: Ending, steps: Int) {
        let finished = Atomic<Bool>(false)
        let end = state.withLock { $0.now } + limit
        Task.detached {
            await body()
            finished.store(true, ordering: .relaxed)
        }
        var steps = 0
        var ending = Ending.finished
        while true {
            let ran = drain(atMost: Self.livelockSteps)
            steps += ran
            if ran >= Self.livelockSteps {
                ending = .livelock(at: elapsed)
                break
            }
            if finished.load(ordering: .relaxed) { break }
            guard let next = state.withLock({ $0.timers.first?.deadline }) else {
                ending = .stalled
                break
            }
            if next > end {
                ending = .timeLimit
                break
            }
            fire(upTo: next)
        }
        // What is left of this run ends here: sleepers are cancelled, their tasks run out.
        for _ in 0..<100 {
            let left = state.withLock { state -> [Sleeper] in
                defer { state.timers = [] }
                return state.timers.sorted { $0.sequence < $1.sequence }.map(\.sleeper)
            }
            if left.isEmpty { break }
            for sleeper in left { sleeper.end(.failure(CancellationError())) }
            steps += drain(atMost: Self.livelockSteps)
        }
        return (ending, steps)
    }

    private static func earlier(_ a: Timer, _ b: Timer) -> Bool {
        (a.deadline, a.sequence) < (b.deadline, b.sequence)
    }

    /// The executor the global executor runs its jobs on: none (the runtime's "generic"
    /// executor, all zeros), which no public initializer makes. Run on an executor of
    /// their own instead, every await in nonisolated code that ends would be a hop through
    /// the queue (five times the steps the daemon takes).
    private static let generic: UnownedSerialExecutor = {
        precondition(
            MemoryLayout<UnownedSerialExecutor>.size == 2 * MemoryLayout<UInt>.size,
            "this Swift runtime's executor references are not two words: the simulation cannot run")
        return unsafeBitCast((UInt(0), UInt(0)), to: UnownedSerialExecutor.self)
    }()

    /// Jobs at one instant of simulated time past which a run is judged a livelock.
    public static let livelockSteps = 200_000

    /// Runs queued jobs until none is left (or `limit` ran).
    private func drain(atMost limit: Int) -> Int {
        var count = 0
        while count < limit, let queued = state.withLock({ state -> Queued? in
            guard state.head < state.jobs.count else {
                state.jobs.removeAll(keepingCapacity: true)
                state.head = 0
                return nil
            }
            defer { state.head += 1 }
            return state.jobs[state.head]
        }) {
            queued.job.runSynchronously(on: queued.onSerialExecutor ? executor.asUnownedSerialExecutor() : Self.generic)
            count += 1
        }
        return count
    }

    /// Moves the clock to `deadline` and wakes every sleeper due by then, in order.
    private func fire(upTo deadline: Duration) {
        let due = state.withLock { state -> [Timer] in
            state.now = max(state.now, deadline)
            let count = state.timers.prefix { $0.deadline <= deadline }.count
            let due = Array(state.timers.prefix(count))
            state.timers.removeFirst(count)
            return due
        }
        for timer in due { timer.sleeper.end(.success(())) }
    }

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        let target = origin.duration(to: deadline)
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard sleeper.start(continuation) else { return }
                state.withLock { state in
                    state.sequence += 1
                    let timer = Timer(deadline: max(target, state.now), sequence: state.sequence, sleeper: sleeper)
                    // After every timer due no later (a later sequence goes after an equal deadline).
                    var low = 0, high = state.timers.count
                    while low < high {
                        let middle = (low + high) / 2
                        if Self.earlier(state.timers[middle], timer) { low = middle + 1 } else { high = middle }
                    }
                    state.timers.insert(timer, at: low)
                }
            }
        } onCancel: {
            sleeper.end(.failure(CancellationError()))
        }
    }
}

/// One sleeping task: woken once, by its deadline or its cancellation.
final class Sleeper: Sendable {
    private enum Phase {
        case waiting
        case sleeping(CheckedContinuation<Void, any Error>)
        case ended(Result<Void, any Error>)
        case done
    }
    private let phase = Mutex(Phase.waiting)

    /// Starts sleeping; false (and resumed at once) when it was already ended.
    func start(_ continuation: CheckedContinuation<Void, any Error>) -> Bool {
        let early = phase.withLock { phase -> Result<Void, any Error>? in
            if case .ended(let result) = phase {
                phase = .done
                return result
            }
            phase = .sleeping(continuation)
            return nil
        }
        if let early {
            continuation.resume(with: early)
            return false
        }
        return true
    }

    func end(_ result: Result<Void, any Error>) {
        let continuation = phase.withLock { phase -> CheckedContinuation<Void, any Error>? in
            switch phase {
            case .waiting:
                phase = .ended(result)
                return nil
            case .sleeping(let continuation):
                phase = .done
                return continuation
            case .ended, .done:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}

/// The executor of actors that would have a queue of their own (``SimulationRuntime/serialExecutor``):
/// their jobs go to the runtime's queue, and only its loop ever runs one.
final class StepExecutor: SerialExecutor {
    func enqueue(_ job: UnownedJob) {
        SimulationRuntime.shared.enqueue(job, onSerialExecutor: true)
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// The simulation's clock: it moves only when every task waits (see ``SimulationRuntime``).
public struct SimulatedClock: RadioClock {
    let runtime: SimulationRuntime

    public var now: ContinuousClock.Instant { runtime.origin.advanced(by: runtime.elapsed) }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try Task.checkCancellation()
        try await runtime.sleep(until: deadline)
    }
}
