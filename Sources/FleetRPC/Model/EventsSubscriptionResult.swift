/// Result of `events.subscribe` and `events.unsubscribe`: the topics this connection now receives.
public struct EventsSubscriptionResult: Sendable, Hashable, Codable {
    /// Topics subscribed after the call.
    public var topics: [EventTopic]

    public init(topics: [EventTopic]) {
        self.topics = topics
    }
}
