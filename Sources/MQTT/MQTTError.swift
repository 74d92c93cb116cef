/// Every failure of the `MQTT` module, as a kind a caller can branch on and a sentence a
/// user can read. libmosquitto's `MOSQ_ERR_*` codes are mapped in one place,
/// `MQTTError+Mosquitto.swift`.
public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The broker URL cannot be used (scheme, host or port).
        case invalidURL
        /// A configuration value is out of range or a file it names cannot be read.
        case invalidConfiguration
        /// A topic or filter is not valid MQTT (wildcards in a topic, bad UTF-8, empty).
        case invalidTopic
        /// The payload is larger than MQTT allows (256 MiB).
        case payloadTooLarge
        /// A QoS 0 publish while the session is down (QoS 1 and 2 are queued instead).
        case notConnected
        /// The broker refused something: the connection (credentials, client ID) or a
        /// subscription (access control).
        case refused
        /// `shutdown()` was called; the client cannot be used again.
        case shutDown
        /// Anything else libmosquitto reports (out of memory, TLS set-up, system errors).
        case library
        /// libmosquitto is not installed (Debian's `libmosquitto1`), or is too old: it is
        /// loaded when the first client is made, not when the program starts.
        case libraryMissing
    }

    public let kind: Kind
    /// A complete sentence, e.g. "The topic filter \"a/#/b\" is not valid MQTT."
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    static let shutDown = MQTTError(.shutDown, "The MQTT client was shut down.")
}
