/// Parameters of `events.subscribe` and `events.unsubscribe`.
public struct EventsSubscribeParams: Sendable, Hashable, Codable {
    /// The topics (default: all).
    public var topics: [EventTopic]?

    public init(topics: [EventTopic]? = nil) {
        self.topics = topics
    }
}
