public import JSONRPC

extension FleetMethods {
    /// `events.unsubscribe`.
    public enum EventsUnsubscribe: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "events.unsubscribe",
            summary: "Stop receiving events on this connection (the given topics, or all).",
            params: [
                RPCParamDescriptor(
                    "topics", .array(of: .string(allowed: EventTopic.allCases.map(\.rawValue))), "Topics (default all).")
            ],
            result: RPCResultDescriptor("subscription", "The topics this connection still receives.", schema: Schemas.topics),
            access: .read,
            errors: [.permissionDenied])

        public typealias Params = EventsSubscribeParams
        public typealias Result = EventsSubscriptionResult
    }
}
