public import JSONRPC

/// A method that changes the topics of the events this connection receives, and answers them.
public protocol TopicsMethod: RPCMethod where Params == EventsSubscribeParams, Result == EventsSubscriptionResult {}

extension TopicsMethod {
    /// `topics`: what its result is.
    static func topicsMethod(_ name: String, _ summary: String, topics: String) -> RPCMethodDescriptor {
        describe(
            name, summary, params: ["topics": "Topics (default all)."], result: RPCResultDescriptor("subscription", topics),
            access: .read, errors: [.permissionDenied])
    }
}

extension FleetMethods {
    /// `events.subscribe`.
    public enum EventsSubscribe: TopicsMethod {
        public static let descriptor = topicsMethod(
            "events.subscribe", "Receive events as \(EventNotification.method) notifications on this connection.",
            topics: "The topics this connection now receives.")
    }

    /// `events.unsubscribe`.
    public enum EventsUnsubscribe: TopicsMethod {
        public static let descriptor = topicsMethod(
            "events.unsubscribe", "Stop receiving events on this connection (the given topics, or all).",
            topics: "The topics this connection still receives.")
    }
}

/// Parameters of `events.subscribe` and `events.unsubscribe`.
public struct EventsSubscribeParams: RPCMethodParams, Hashable {
    /// The topics (default: all).
    public var topics: [EventTopic]?

    public init(topics: [EventTopic]? = nil) { self.topics = topics }
}

/// Result of `events.subscribe` and `events.unsubscribe`: the topics this connection now receives.
public struct EventsSubscriptionResult: Sendable, Hashable, Codable {
    /// Topics subscribed after the call.
    public var topics: [EventTopic]

    public init(topics: [EventTopic]) { self.topics = topics }
}
