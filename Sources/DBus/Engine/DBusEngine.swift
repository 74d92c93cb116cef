internal import CDBus
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The engine behind a ``DBusConnection``: one thread owns the libdbus connection and is
/// the only thread that ever calls libdbus with it. Other threads build messages, queue a
/// ``Command`` under the mutex and wake the owner through an eventfd; the owner runs its
/// own `poll()` over the connection's `DBusWatch` fds, the eventfd and the earliest
/// `DBusTimeout`, then dispatches.
///
/// `@unchecked Sendable`: `shared` is guarded by a `Mutex`; every other mutable property
/// (marked *owner thread only*) is touched only by the owner thread, which is also the
/// thread every libdbus callback (watch, timeout, filter, pending-call notify) runs on,
/// because no other thread calls libdbus with this connection. `wakeFD` is immutable and
/// closed only in `deinit`, when no thread can hold the engine any more.
final class DBusEngine: @unchecked Sendable {
    enum Command {
        case call(id: UInt64, message: DBusMessage, timeoutMilliseconds: Int32)
        case send(DBusMessage)
        case cancel(id: UInt64)
        case close
    }

    /// A call's life: `preparing` until queued, `waiting` until exactly one of reply,
    /// cancellation or termination removes it and resumes its continuation (so an unsafe
    /// continuation is enough: the state machine guarantees a single resume).
    enum CallState {
        case preparing
        case waiting(UnsafeContinuation<DBusMessage, any Error>)
        case cancelled
    }

    struct Subscription {
        let rule: DBusMatchRule
        let continuation: AsyncThrowingStream<DBusSignal, any Error>.Continuation
    }

    /// The owner of a well-known name that some subscription uses as its sender.
    struct TrackedName {
        var subscribers = 0
        /// nil: not known yet; .some(nil): the name has no owner.
        var owner: String?? = nil
    }

    struct Shared {
        var commands: [Command] = []
        var calls: [UInt64: CallState] = [:]
        var subscriptions: [UInt64: Subscription] = [:]
        var trackedNames: [String: TrackedName] = [:]
        var objects: [String: DBusMethodHandler] = [:]
        var handlerTasks: [UInt64: Task<Void, Never>] = [:]
        var nextID: UInt64 = 1
        /// Set once the connection is closed or lost; every later request fails with it.
        var terminated: DBusError? = nil
        /// The owner thread is (about to be) blocked in poll() and needs an eventfd write.
        var sleeping = false
    }

    let shared = Mutex(Shared())
    let logger: Logger
    let wakeFD: Int32

    // MARK: Owner thread only
    var connection: OpaquePointer?
    var watches: [OpaquePointer] = []
    var timeouts: [OpaquePointer: UInt64] = [:]
    var pendings: [UInt64: OpaquePointer] = [:]
    var completedPendings: [OpaquePointer] = []
    /// Set by the owner thread before the connection exists; read only by libdbus callbacks.
    var ownerThread = pthread_t()
    var startup: (address: String, continuation: CheckedContinuation<String, any Error>)?

    init(logger: Logger) throws(DBusError) {
        self.logger = logger
        let fd = cdbus_eventfd_create()
        guard fd >= 0 else {
            throw DBusError(name: DBusError.Name.failed, message: "Could not create the D-Bus engine's wake-up eventfd.")
        }
        self.wakeFD = fd
    }

    deinit {
        _ = closeFileDescriptor(wakeFD)
    }

    func makeID() -> UInt64 {
        shared.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
    }

    /// Queues a command for the owner thread and wakes it if it sleeps. Throws the
    /// termination error once the connection is gone.
    func enqueue(_ command: Command) throws(DBusError) {
        let result: Result<Bool, DBusError> = shared.withLock { s in
            if let error = s.terminated { return .failure(error) }
            s.commands.append(command)
            let wake = s.sleeping
            s.sleeping = false
            return .success(wake)
        }
        if try result.get() { _ = cdbus_eventfd_signal(wakeFD) }
    }

    /// Marks the engine closed at once (later requests fail with `Disconnected`) and asks
    /// the owner thread to fail what is outstanding and close the connection.
    func requestClose() {
        let first = shared.withLock { s in
            guard s.terminated == nil else { return false }
            s.terminated = .closed
            s.commands.append(.close)
            return true
        }
        if first { wake() }
    }

    /// Wakes the owner thread unconditionally (libdbus's wakeup-main hook).
    func wake() {
        _ = cdbus_eventfd_signal(wakeFD)
    }

    // MARK: Method calls

    /// Sends `message` and waits for its reply (an error reply is returned, not thrown).
    func call(_ message: DBusMessage, timeout: Duration) async throws -> DBusMessage {
        let id = shared.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.calls[id] = .preparing
            return id
        }
        let milliseconds = Self.milliseconds(timeout)
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                submit(id: id, message: message, timeoutMilliseconds: milliseconds, continuation: continuation)
            }
        } onCancel: {
            cancel(id: id)
        }
    }

    private func submit(
        id: UInt64, message: DBusMessage, timeoutMilliseconds: Int32,
        continuation: UnsafeContinuation<DBusMessage, any Error>
    ) {
        enum Outcome { case queued(wake: Bool), cancelled, failed(DBusError) }
        let outcome: Outcome = shared.withLock { s in
            if case .cancelled = s.calls[id] {
                s.calls[id] = nil
                return .cancelled
            }
            if let error = s.terminated {
                s.calls[id] = nil
                return .failed(error)
            }
            s.calls[id] = .waiting(continuation)
            s.commands.append(.call(id: id, message: message, timeoutMilliseconds: timeoutMilliseconds))
            let wake = s.sleeping
            s.sleeping = false
            return .queued(wake: wake)
        }
        switch outcome {
        case .queued(let wake): if wake { _ = cdbus_eventfd_signal(wakeFD) }
        case .cancelled: continuation.resume(throwing: CancellationError())
        case .failed(let error): continuation.resume(throwing: error)
        }
    }

    private func cancel(id: UInt64) {
        let continuation: UnsafeContinuation<DBusMessage, any Error>? = shared.withLock { s in
            switch s.calls[id] {
            case .preparing:
                s.calls[id] = .cancelled
                return nil
            case .waiting(let continuation):
                s.calls[id] = nil
                if s.terminated == nil { s.commands.append(.cancel(id: id)) }
                return continuation
            case .cancelled, nil:
                return nil
            }
        }
        if let continuation {
            // The owner thread picks the cancel up with the next command it processes.
            wake()
            continuation.resume(throwing: CancellationError())
        }
    }

    /// Called on the owner thread when a call finished (reply, error reply, or local error).
    func complete(id: UInt64, with result: Result<DBusMessage, DBusError>) {
        let continuation: UnsafeContinuation<DBusMessage, any Error>? = shared.withLock { s in
            guard case .waiting(let continuation) = s.calls[id] else { return nil }
            s.calls[id] = nil
            return continuation
        }
        continuation?.resume(with: result.mapError { $0 as any Error })
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 { return 1 }
        if seconds >= Int64(Int32.max / 1000) { return Int32.max - 1 }
        let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(max(1, ms))
    }
}
