public import JSONRPC

extension FleetMethods {
    /// `events.subscribe`.
    public enum EventsSubscribe: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "events.subscribe",
            summary: "Receive events as \(EventNotification.method) notifications on this connection.",
            params: [
                RPCParamDescriptor(
                    "topics", .array(of: .string(allowed: EventTopic.allCases.map(\.rawValue))), "Topics (default all).")
            ],
            result: RPCResultDescriptor("subscription", "The topics this connection now receives.", schema: Schemas.topics),
            access: .read,
            errors: [.permissionDenied])

        public typealias Params = EventsSubscribeParams
        public typealias Result = EventsSubscriptionResult
    }
}

/// Result of `events.subscribe` and `events.unsubscribe`: the topics this connection now receives.
public struct EventsSubscriptionResult: Sendable, Hashable, Codable {
    /// Topics subscribed after the call.
    public var topics: [EventTopic]

    public init(topics: [EventTopic]) {
        self.topics = topics
    }
}
