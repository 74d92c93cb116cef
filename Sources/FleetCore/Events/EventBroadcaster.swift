import Synchronization

/// Fans events out to any number of subscribers, each with its own bounded buffer.
///
/// ``publish(_:)`` never waits: a subscriber that falls behind loses its OLDEST buffered
/// events and receives `.dropped(n)` before the next event it does get. A subscription ends
/// (and unsubscribes) when its consumer stops iterating, when the iterating task is
/// cancelled, or after ``finish()`` once its buffer is drained.
public final class EventBroadcaster<Event: Sendable>: Sendable {
    /// What a subscriber receives.
    public enum Delivery: Sendable {
        /// The next event.
        case event(Event)
        /// This many events were discarded because the subscriber was too slow.
        case dropped(Int)
    }

    struct Subscriber: Sendable {
        var buffer: BoundedBuffer<Event>
        /// Events it wants; others are never buffered for it, nor wake it.
        var filter: (@Sendable (Event) -> Bool)?
        var dropped = 0
        var waiting: CheckedContinuation<Delivery?, Never>?
    }

    struct State: Sendable {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
        var finished = false
    }

    /// Buffer size for subscriptions that do not choose one.
    public let defaultBufferSize: Int
    let state = Mutex(State())

    public init(defaultBufferSize: Int = 256) {
        self.defaultBufferSize = max(1, defaultBufferSize)
    }

    /// Number of live subscriptions.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Starts a subscription: every event published from now on is buffered for it
    /// (at most `bufferSize`, oldest dropped first). With `filter`, only the events it
    /// accepts: the others never wake the subscriber (`filter` runs inside `publish`, under
    /// a lock, so it must be quick and must not call the broadcaster).
    public func subscribe(bufferSize: Int? = nil, where filter: (@Sendable (Event) -> Bool)? = nil) -> Subscription {
        let id = state.withLock { state -> UInt64? in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = Subscriber(
                buffer: BoundedBuffer(capacity: bufferSize ?? defaultBufferSize), filter: filter)
            return state.nextID
        }
        return Subscription(token: Token(broadcaster: self, id: id))
    }

    /// Delivers `event` to every subscriber without waiting.
    public func publish(_ event: Event) {
        var wake: [CheckedContinuation<Delivery?, Never>] = []
        state.withLock { state in
            for id in state.subscribers.keys {
                if let filter = state.subscribers[id]!.filter, !filter(event) { continue }
                if let continuation = state.subscribers[id]!.waiting {
                    state.subscribers[id]!.waiting = nil
                    wake.append(continuation)
                } else if state.subscribers[id]!.buffer.append(event) {
                    state.subscribers[id]!.dropped += 1
                }
            }
        }
        for continuation in wake { continuation.resume(returning: .event(event)) }
    }

    /// Ends every subscription once its buffered events are consumed; later subscriptions
    /// end at once.
    public func finish() {
        let wake = state.withLock { state -> [CheckedContinuation<Delivery?, Never>] in
            state.finished = true
            var wake: [CheckedContinuation<Delivery?, Never>] = []
            for (id, subscriber) in state.subscribers where subscriber.waiting != nil {
                wake.append(subscriber.waiting!)
                state.subscribers[id] = nil
            }
            return wake
        }
        for continuation in wake { continuation.resume(returning: nil) }
    }

    fileprivate func next(id: UInt64) async -> Delivery? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Delivery?, Never>) in
                let immediate: Delivery?? = state.withLock { state in
                    guard var subscriber = state.subscribers[id] else { return .some(nil) }
                    let result: Delivery??
                    if subscriber.dropped > 0 {
                        result = .some(.dropped(subscriber.dropped))
                        subscriber.dropped = 0
                    } else if let event = subscriber.buffer.popFirst() {
                        result = .some(.event(event))
                    } else if state.finished {
                        state.subscribers[id] = nil
                        return .some(nil)
                    } else {
                        subscriber.waiting = continuation
                        result = .none
                    }
                    state.subscribers[id] = subscriber
                    return result
                }
                if case .some(let delivery) = immediate { continuation.resume(returning: delivery) }
            }
        } onCancel: {
            unsubscribe(id: id)
        }
    }

    fileprivate func unsubscribe(id: UInt64) {
        let waiting = state.withLock { $0.subscribers.removeValue(forKey: id)?.waiting }
        waiting?.resume(returning: nil)
    }

    /// Unsubscribes when the last copy of a subscription or its iterator goes away.
    final class Token: Sendable {
        let broadcaster: EventBroadcaster
        let id: UInt64?

        init(broadcaster: EventBroadcaster, id: UInt64?) {
            self.broadcaster = broadcaster
            self.id = id
        }

        deinit { if let id { broadcaster.unsubscribe(id: id) } }
    }

    /// One subscriber's events, as an `AsyncSequence` of ``Delivery``.
    public struct Subscription: AsyncSequence, Sendable {
        public typealias Element = Delivery
        let token: Token

        public func makeAsyncIterator() -> Iterator { Iterator(token: token) }

        public struct Iterator: AsyncIteratorProtocol {
            let token: Token

            public mutating func next() async -> Delivery? {
                guard let id = token.id, !Task.isCancelled else {
                    if let id = token.id { token.broadcaster.unsubscribe(id: id) }
                    return nil
                }
                return await token.broadcaster.next(id: id)
            }
        }
    }
}
