/// The params of a server→client notification sent to a subscribed connection, under the
/// method name ``method``.
public import JSONRPC

public struct EventNotification: Sendable, Hashable, Codable {
    /// The JSON-RPC method name of event notifications.
    public static let method = "events.event"
    /// The notification a subscriber gets when it fell behind and `count` events were lost.
    public static let droppedMethod = "events.dropped"

    public var topic: EventTopic
    /// The board concerned, if any.
    public var address: String?
    /// When it happened, ISO 8601 UTC.
    public var time: String
    /// Topic-specific detail: a `BoardInfo` for `boards`, `{celsius}` for `temperature`,
    /// `{on}` for `led`, `{powered, bluez}` for `adapter`.
    public var data: JSONValue

    public init(topic: EventTopic, address: String? = nil, time: String, data: JSONValue) {
        (self.topic, self.address, self.time, self.data) = (topic, address, time, data)
    }
}
