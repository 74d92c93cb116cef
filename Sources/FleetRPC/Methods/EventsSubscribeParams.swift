/// Parameters of `events.subscribe` and `events.unsubscribe`.
public import JSONRPC

public struct EventsSubscribeParams: RPCMethodParams, Hashable {
    /// The topics (default: all).
    public var topics: [EventTopic]?

    public init(topics: [EventTopic]? = nil) {
        self.topics = topics
    }

    public init(checked params: RPCCheckedParams) throws(RPCError) {
        self.init(
            topics: try params.optional("topics") { value in
                value.arrayValue.map { $0.compactMap { $0.stringValue.flatMap(EventTopic.init(rawValue:)) } }
            })
    }
}
