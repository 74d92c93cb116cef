/// What a waiter makes of the mirror's current state.
public enum MirrorWaitStep<T: Sendable>: Sendable {
    case pending
    case done(T)
    case failed(BlueZError)
}

/// The mirror as a waiter sees it after every change.
public struct BlueZMirrorSnapshot: Sendable {
    public let tree: BlueZObjectTree
    public let isLoaded: Bool
}

/// A registered wait; collect its outcome with `BlueZObjectMirror.result(of:timeout:description:)`.
public struct MirrorWaitTicket<T: Sendable>: Sendable {
    let id: UInt64
}

/// Type-erased waiter, touched only inside the mirror actor.
protocol MirrorWaiter: AnyObject {
    /// The object whose changes (its own or its children's) can change the outcome; nil:
    /// any change can.
    var watching: String? { get }
    /// Re-evaluates against the current state; does nothing once finished.
    func evaluate(_ snapshot: BlueZMirrorSnapshot)
    func fail(_ error: BlueZError)
}

/// Lives only inside the mirror actor (created, evaluated, resumed and dropped there).
final class TypedMirrorWaiter<T: Sendable>: MirrorWaiter {
    let condition: @Sendable (BlueZMirrorSnapshot) -> MirrorWaitStep<T>
    let watching: String?
    var outcome: Result<T, BlueZError>?
    var continuation: CheckedContinuation<T, any Error>?

    init(watching: String?, condition: @escaping @Sendable (BlueZMirrorSnapshot) -> MirrorWaitStep<T>) {
        self.watching = watching
        self.condition = condition
    }

    func evaluate(_ snapshot: BlueZMirrorSnapshot) {
        guard outcome == nil else { return }
        switch condition(snapshot) {
        case .pending: return
        case .done(let value): finish(.success(value))
        case .failed(let error): finish(.failure(error))
        }
    }

    func fail(_ error: BlueZError) {
        guard outcome == nil else { return }
        finish(.failure(error))
    }

    private func finish(_ result: Result<T, BlueZError>) {
        outcome = result
        continuation?.resume(with: result.mapError { $0 as any Error })
        continuation = nil
    }
}

extension BlueZObjectMirror {
    var snapshot: BlueZMirrorSnapshot { BlueZMirrorSnapshot(tree: tree, isLoaded: isLoaded) }

    /// Registers a condition, evaluated now and after every change until it is done or
    /// failed. Registering before starting an operation (e.g. `Connect`) means no change the
    /// operation causes can be missed. A condition that reads only the object at `watching`
    /// and the objects under it (and whether BlueZ is loaded) is evaluated only when those
    /// change (or BlueZ comes or goes).
    public func register<T: Sendable>(
        watching: String? = nil, _ condition: @escaping @Sendable (BlueZMirrorSnapshot) -> MirrorWaitStep<T>
    ) -> MirrorWaitTicket<T> {
        let id = takeID()
        let waiter = TypedMirrorWaiter(watching: watching, condition: condition)
        waiters[id] = waiter
        waiter.evaluate(snapshot)
        return MirrorWaitTicket(id: id)
    }

    /// Waits for a registered condition; throws `.timeout(description)` after `timeout`, and
    /// `CancellationError` when the calling task is cancelled. The ticket is used up.
    public func result<T: Sendable>(
        of ticket: MirrorWaitTicket<T>, timeout: Duration, description: String
    ) async throws -> T {
        guard let waiter = waiters[ticket.id] as? TypedMirrorWaiter<T> else {
            throw BlueZError.notFound("wait ticket \(ticket.id) is unknown or used up")
        }
        defer { waiters[ticket.id] = nil }
        if let outcome = waiter.outcome { return try outcome.get() }
        let clock = self.clock
        let timer = Task { [weak self] in
            guard (try? await clock.sleep(for: timeout)) != nil else { return }
            await self?.expire(ticket.id, description: description)
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if let outcome = waiter.outcome {
                    continuation.resume(with: outcome.mapError { $0 as any Error })
                } else {
                    waiter.continuation = continuation
                }
            }
        } onCancel: {
            Task { await self.cancelWait(ticket.id) }
        }
    }

    /// Registers `condition` (see ``register(watching:_:)``) and waits for it.
    public func wait<T: Sendable>(
        timeout: Duration, description: String, watching: String? = nil,
        _ condition: @escaping @Sendable (BlueZMirrorSnapshot) -> MirrorWaitStep<T>
    ) async throws -> T {
        let ticket = register(watching: watching, condition)
        return try await result(of: ticket, timeout: timeout, description: description)
    }

    /// How many registered waits are not collected yet.
    var waitsRegistered: Int { waiters.count }

    /// Drops a registered wait that will not be collected.
    public func discard<T: Sendable>(_ ticket: MirrorWaitTicket<T>) {
        waiters[ticket.id]?.fail(.timeout("abandoned"))
        waiters[ticket.id] = nil
    }

    /// Evaluates the waiters `event` may concern: those watching its object or one above
    /// it, and every one when BlueZ came or went (nil: every one).
    func evaluateWaiters(after event: BlueZMirrorEvent? = nil) {
        guard !waiters.isEmpty else { return }
        let current = snapshot
        let changed: String? =
            switch event {
            case .interfacesAdded(let path, _), .interfacesRemoved(let path, _), .propertiesChanged(let path, _, _, _): path
            case .serviceLost, .serviceLoaded, nil: nil
            }
        for waiter in waiters.values {
            if let changed, let watched = waiter.watching, !Self.path(changed, isAtOrUnder: watched) { continue }
            waiter.evaluate(current)
        }
    }

    /// `/org/bluez/hci0/dev_AA/service000a` is under `/org/bluez/hci0/dev_AA`.
    static func path(_ path: String, isAtOrUnder watched: String) -> Bool {
        guard path.hasPrefix(watched) else { return false }
        return path.utf8.count == watched.utf8.count || path.utf8.dropFirst(watched.utf8.count).first == UInt8(ascii: "/")
    }

    private func expire(_ id: UInt64, description: String) {
        waiters[id]?.fail(.timeout(description))
    }

    private func cancelWait(_ id: UInt64) {
        // CancellationError is not a BlueZError; the caller sees `.timeout("cancelled")`
        // only if it asks BlueZError(error); the awaiting task itself is being cancelled.
        waiters[id]?.fail(.timeout("cancelled"))
    }
}
