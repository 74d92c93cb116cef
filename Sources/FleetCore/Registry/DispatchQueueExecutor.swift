import Dispatch

/// A serial executor on a Dispatch queue of its own, for an actor whose methods block on
/// file I/O (a save that fsyncs): it runs there, not on Swift's cooperative pool, whose
/// threads (one per core, two on a small gateway) every call and every board share. A slow
/// disk then delays only that actor's callers, not every answer of the daemon.
final class DispatchQueueExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
