/// MQTT's delivery guarantees.
public enum MQTTQoS: Int32, Sendable, Hashable, CaseIterable {
    case atMostOnce = 0
    case atLeastOnce = 1
    case exactlyOnce = 2
}

/// A message the broker delivered for one of the client's subscriptions.
public struct MQTTMessage: Sendable, Hashable {
    public let topic: String
    public let payload: [UInt8]
    public let qos: MQTTQoS
    /// True when the broker sent a retained message (on subscribing), not a live publish.
    public let retain: Bool

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    /// The payload as UTF-8 text (invalid sequences replaced).
    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// What happens to an ``MQTTClient``, in order, on its ``MQTTClient/events`` stream.
public enum MQTTEvent: Sendable, Hashable {
    /// The broker accepted the connection and every subscription is in place again
    /// (re-made and acknowledged): from here on, matching publishes are delivered.
    case connected
    /// An established connection ended; `reason` is a sentence. The client reconnects by
    /// itself after its backoff delay. The last event of a client that was shut down is
    /// `.disconnected(reason: "The client disconnected.")`.
    case disconnected(reason: String)
    /// A connection attempt failed (broker down, refused credentials, TLS, DNS); the
    /// client tries again after `retryIn`.
    case connectionFailed(reason: String, retryIn: Duration)
    /// A message arrived for a subscription.
    case message(MQTTMessage)
    /// libmosquitto finished a publish: a QoS 0 message was written to the socket, a
    /// QoS 1 message acknowledged (PUBACK), a QoS 2 message completed (PUBCOMP).
    case published(messageID: Int32)
}
