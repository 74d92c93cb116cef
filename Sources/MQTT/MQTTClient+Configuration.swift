extension MQTTClient {
    /// How to reach and talk to the broker. Immutable; every field but the URL and the
    /// client ID has a default.
    public struct Configuration: Sendable {
        /// The broker, `mqtt://host[:port]` or `mqtts://host[:port]`.
        public var url: MQTTURL
        /// The MQTT client identifier; the broker closes an older connection with the same ID.
        public var clientID: String
        public var username: String?
        /// Sent only with a username (MQTT 3.1.1 has no password without a username).
        public var password: String?
        /// PEM file of the CA certificates that sign the broker's certificate (`mqtts://`
        /// only). Without it the system's CA directory, ``systemCADirectory``, is used.
        public var caFile: String?
        /// Seconds between PINGREQs when idle, 5…65535; a broker that stays silent this
        /// long is taken as gone. Also bounds how long a connection attempt may hang.
        public var keepAlive: Int
        /// The message the broker publishes for this client when the connection ends
        /// without a DISCONNECT (crash, kill, network loss). Not sent after ``MQTTClient/shutdown()``.
        public var will: Will?
        /// The first delay before reconnecting; it doubles after each failed attempt up to
        /// `reconnectDelayMax`, and starts again from here once a connection is accepted.
        public var reconnectDelayMin: Duration
        public var reconnectDelayMax: Duration
        /// How many undelivered events ``MQTTClient/events`` keeps; newer ones are dropped
        /// (and logged) while a consumer lags this far behind.
        public var eventBufferLimit: Int

        /// The directory of trusted CA certificates used for `mqtts://` without ``caFile``.
        public static let systemCADirectory = "/etc/ssl/certs"

        public init(
            url: MQTTURL,
            clientID: String,
            username: String? = nil,
            password: String? = nil,
            caFile: String? = nil,
            keepAlive: Int = 60,
            will: Will? = nil,
            reconnectDelayMin: Duration = .seconds(1),
            reconnectDelayMax: Duration = .seconds(30),
            eventBufferLimit: Int = 10_000
        ) {
            self.url = url
            self.clientID = clientID
            self.username = username
            self.password = password
            self.caFile = caFile
            self.keepAlive = keepAlive
            self.will = will
            self.reconnectDelayMin = reconnectDelayMin
            self.reconnectDelayMax = reconnectDelayMax
            self.eventBufferLimit = eventBufferLimit
        }

        /// A sentence for the first value that cannot work, or nil.
        func problem() -> String? {
            if clientID.isEmpty { return "The MQTT client ID is empty." }
            if clientID.utf8.count > 65535 { return "The MQTT client ID is longer than 65535 bytes." }
            if !(5...65535).contains(keepAlive) {
                return "The MQTT keep-alive is \(keepAlive) seconds; it must be from 5 to 65535."
            }
            if password != nil && username == nil {
                return "An MQTT password was given without a username."
            }
            if reconnectDelayMin <= .zero || reconnectDelayMax < reconnectDelayMin {
                return "The MQTT reconnect delays must be positive, the maximum at least the minimum."
            }
            if eventBufferLimit < 1 { return "The MQTT event buffer limit must be at least 1." }
            if caFile != nil && !url.usesTLS {
                return "A CA file was given for \(url), which does not use TLS; use mqtts:// or drop the CA file."
            }
            return nil
        }
    }

    /// The last will: published by the broker when the client vanishes without disconnecting.
    public struct Will: Sendable, Hashable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: MQTTQoS
        public var retain: Bool

        public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }
}
