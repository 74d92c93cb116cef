/// Parameters of `events.subscribe` and `events.unsubscribe`.
public import JSONRPC

public struct EventsSubscribeParams: RPCMethodParams, Codable, Hashable {
    /// The topics (default: all).
    public var topics: [EventTopic]?

    public init(topics: [EventTopic]? = nil) {
        self.topics = topics
    }
}
