public import Logging

/// An MQTT 3.1.1 client over libmosquitto that connects in the background, keeps
/// reconnecting, and re-makes its subscriptions on every connect.
///
/// Thread model: `start()` starts one dedicated network thread per client; it alone
/// connects, reconnects (with a doubling backoff) and runs libmosquitto's loop, so every
/// libmosquitto callback runs there and only updates state and yields to ``events`` — no
/// caller code ever runs on it. Every method may be called from any thread or task:
/// `publish` only queues into libmosquitto (never waits for the network), `subscribe` and
/// `unsubscribe` suspend (without blocking a thread) until the broker acknowledges, and
/// `shutdown()` blocks for at most about two seconds while DISCONNECT is flushed.
///
/// A clean session is used: the broker keeps nothing between connections. The client
/// remembers its subscriptions and makes them again after each reconnect, before it
/// reports ``MQTTEvent/connected``.
public final class MQTTClient: Sendable {
    public let configuration: Configuration
    /// Everything that happens to the client, in order, for one consumer. It ends after
    /// `shutdown()`. Bounded by ``Configuration/eventBufferLimit``.
    public let events: AsyncStream<MQTTEvent>
    let engine: MQTTEngine

    /// Checks the configuration and prepares the client; nothing touches the network until
    /// ``start()``. Throws ``MQTTError`` (`.invalidConfiguration`, `.invalidTopic` for the
    /// will) with a sentence saying what is wrong.
    public init(configuration: Configuration, logger: Logger? = nil) throws {
        var logger = logger ?? Logger(label: "mqtt", factory: { _ in SwiftLogNoOpLogHandler() })
        logger[metadataKey: "mqtt.broker"] = "\(configuration.url)"
        logger[metadataKey: "mqtt.client_id"] = "\(configuration.clientID)"
        let (events, continuation) = AsyncStream.makeStream(
            of: MQTTEvent.self, bufferingPolicy: .bufferingOldest(max(1, configuration.eventBufferLimit)))
        do {
            self.engine = try MQTTEngine(configuration: configuration, logger: logger, continuation: continuation)
        } catch {
            continuation.finish()
            throw error
        }
        self.configuration = configuration
        self.events = events
    }

    deinit { engine.shutdown() }

    /// Begins connecting in the background and returns at once; the client keeps trying
    /// until it is shut down (``MQTTEvent/connectionFailed(reason:retryIn:)`` for each failed
    /// attempt). Calling it again does nothing; after `shutdown()` it throws `.shutDown`.
    public func start() throws {
        try engine.start()
    }

    /// Hands a message to libmosquitto and returns its message ID, which a later
    /// ``MQTTEvent/published(messageID:)`` reports. Never waits for the network.
    ///
    /// QoS 1 and 2 messages are queued while disconnected and sent after the next connect;
    /// QoS 0 while disconnected throws `.notConnected`. Throws `.invalidTopic`,
    /// `.payloadTooLarge` or `.shutDown` otherwise.
    @discardableResult
    public func publish(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false) throws -> Int32 {
        try engine.publish(topic: topic, payload: payload, qos: qos, retain: retain)
    }

    /// Subscribes to `filter` now and after every reconnect. Returns when the broker
    /// acknowledged it, or at once while disconnected (it is then made before the next
    /// ``MQTTEvent/connected``). Throws `.invalidTopic` for a bad filter and `.refused` when
    /// the broker denies it (SUBACK failure, e.g. an ACL).
    public func subscribe(_ filter: String, qos: MQTTQoS = .atLeastOnce) async throws {
        try await engine.subscribe(filter, qos: qos)
    }

    /// Stops subscribing to `filter`; returns when the broker acknowledged it (at once while
    /// disconnected). Unknown filters are ignored.
    public func unsubscribe(_ filter: String) async throws {
        try await engine.unsubscribe(filter)
    }

    /// Publishes handed to libmosquitto and not yet reported sent (QoS 0 written, QoS 1
    /// acknowledged, QoS 2 completed). Bound your own queue with it: it grows while the
    /// broker is slow or away. QoS 0 messages lost with a connection stop counting then.
    public var pendingPublishes: Int { engine.pendingPublishes }

    /// True between ``MQTTEvent/connected`` and the next `.disconnected`.
    public var isConnected: Bool { engine.isConnected }

    /// Disconnects cleanly (DISCONNECT is sent, so the broker does not publish the will),
    /// stops the network thread and ends ``events``. Idempotent; also done at deinit.
    /// Publishes still pending are dropped.
    public func shutdown() {
        engine.shutdown()
    }
}
