/// Signals matching one ``DBusMatchRule``, in the order the bus delivered them.
///
/// Ends (throwing a ``DBusError`` with ``DBusError/isDisconnected``) when the connection is
/// lost or closed. Buffer policy: up to `bufferLimit` undelivered signals are kept; when a
/// consumer falls further behind, the stream delivers what it buffered and then throws
/// `org.freedesktop.DBus.Error.LimitsExceeded` — signals are never dropped silently, so a
/// consumer that tracks state knows it must subscribe again and re-read. The subscription
/// (and its match on the bus) ends when iteration ends, the consuming task is cancelled,
/// or every copy of the stream and its iterator is released.
public struct DBusSignalStream: AsyncSequence, Sendable {
    public typealias Element = DBusSignal
    public typealias Failure = any Error

    let base: AsyncThrowingStream<DBusSignal, any Error>
    let token: DBusSubscriptionToken

    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = DBusSignal
        public typealias Failure = any Error

        var base: AsyncThrowingStream<DBusSignal, any Error>.AsyncIterator
        let token: DBusSubscriptionToken

        public mutating func next() async throws -> DBusSignal? {
            try await base.next()
        }

        /// Runs on the caller's actor (no extra hop through the global executor).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> DBusSignal? {
            try await base.next(isolation: actor)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), token: token)
    }
}
