public import FleetRPC

extension FleetRPCClient {
    /// Subscribes this connection to `topics` (all when `nil`) with `events.subscribe` and
    /// returns the events as they come. The stream is set up before the call, so no event
    /// sent after the subscription is missed. Notifications that are not well-formed events
    /// of a known topic are skipped (use ``notifications()`` for the raw ones). The stream
    /// ends with a ``FleetRPCClientError`` when the connection does.
    public func subscribe(
        topics: [EventTopic]? = nil, timeout: Duration? = .seconds(30)
    ) async throws(FleetRPCClientError) -> AsyncThrowingStream<EventNotification, any Error> {
        let raw = notifications()
        _ = try await call(FleetMethods.EventsSubscribe.self, EventsSubscribeParams(topics: topics), timeout: timeout)
        let (stream, continuation) = AsyncThrowingStream<EventNotification, any Error>.makeStream()
        let forwarder = Task {
            do {
                for try await notification in raw where notification.method == EventNotification.method {
                    guard let event = notification.params(as: EventNotification.self) else { continue }
                    continuation.yield(event)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in forwarder.cancel() }
        return stream
    }
}
