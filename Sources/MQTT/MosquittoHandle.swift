import CMosquitto

/// Owns one `struct mosquitto *` and destroys it at deinit. Thin: each method is one
/// libmosquitto call returning its `MOSQ_ERR_*` code; ``MQTTEngine`` decides what runs on
/// which thread.
final class MosquittoHandle: @unchecked Sendable {
    // Safe: the pointer is immutable; libmosquitto guards its own state with mutexes once
    // mosquitto_threaded_set(true) is called (done in init), so publish, subscribe,
    // unsubscribe and disconnect may come from any thread while the network thread runs
    // mosquitto_loop. mosquitto_destroy runs in deinit, when no thread can use the handle.
    private let raw: OpaquePointer

    /// libmosquitto's process-wide initialisation, run once (Swift's lazy statics are
    /// thread-safe). Never undone: mosquitto_lib_cleanup is only for process exit.
    private static let libraryInitialized: Bool = {
        mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue
    }()

    init(clientID: String) throws {
        guard Self.libraryInitialized else {
            throw MQTTError(.library, "libmosquitto could not be initialised.")
        }
        // Clean session: the broker keeps nothing between connections; the engine
        // re-subscribes on every connect.
        guard let raw = mosquitto_new(clientID, true, nil) else {
            throw MQTTError(
                .invalidConfiguration, "libmosquitto cannot create a client with the ID \"\(clientID)\" (out of memory or not valid UTF-8).")
        }
        self.raw = raw
        _ = mosquitto_threaded_set(raw, true)
        _ = mosquitto_int_option(raw, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        // Small control packets (SUBSCRIBE, PUBACK) must not wait for Nagle's algorithm to
        // meet the peer's delayed ACK (~40 ms on Linux each time).
        _ = mosquitto_int_option(raw, MOSQ_OPT_TCP_NODELAY, 1)
    }

    deinit {
        mosquitto_destroy(raw)
    }

    /// The context pointer handed back to every callback.
    func setContext(_ context: UnsafeMutableRawPointer) {
        mosquitto_user_data_set(raw, context)
    }

    func setCallbacks(
        connect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void,
        disconnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void,
        publish: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void,
        message: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafePointer<mosquitto_message>?) -> Void,
        subscribe: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, UnsafePointer<Int32>?) -> Void,
        unsubscribe: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void
    ) {
        mosquitto_connect_callback_set(raw, connect)
        mosquitto_disconnect_callback_set(raw, disconnect)
        mosquitto_publish_callback_set(raw, publish)
        mosquitto_message_callback_set(raw, message)
        mosquitto_subscribe_callback_set(raw, subscribe)
        mosquitto_unsubscribe_callback_set(raw, unsubscribe)
    }

    func setCredentials(username: String, password: String?) -> Int32 {
        mosquitto_username_pw_set(raw, username, password)
    }

    func setWill(topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool) -> Int32 {
        payload.withUnsafeBytes { bytes in
            mosquitto_will_set(raw, topic, Int32(bytes.count), bytes.baseAddress, qos.rawValue, retain)
        }
    }

    /// TLS with the broker's certificate checked against `caFile` or the CAs in `caDirectory`.
    func setTLS(caFile: String?, caDirectory: String?) -> Int32 {
        mosquitto_tls_set(raw, caFile, caDirectory, nil, nil, nil)
    }

    /// Starts a non-blocking connect (the DNS lookup does block): network thread only.
    func connectAsync(host: String, port: Int, keepAlive: Int) -> Int32 {
        mosquitto_connect_async(raw, host, Int32(port), Int32(keepAlive))
    }

    /// Closes any old socket and starts a new non-blocking connect: network thread only.
    func reconnectAsync() -> Int32 {
        mosquitto_reconnect_async(raw)
    }

    /// One round of network I/O, waiting up to `timeoutMilliseconds`; network thread only.
    func loop(timeoutMilliseconds: Int32) -> Int32 {
        mosquitto_loop(raw, timeoutMilliseconds, 1)
    }

    /// Queues DISCONNECT (when connected) and marks the client as disconnecting, which
    /// wakes the network thread. Any thread.
    func disconnect() -> Int32 {
        mosquitto_disconnect(raw)
    }

    /// True while a socket is open (connected or connecting).
    var hasSocket: Bool { mosquitto_socket(raw) >= 0 }

    func publish(messageID: inout Int32, topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool) -> Int32 {
        payload.withUnsafeBytes { bytes in
            mosquitto_publish(raw, &messageID, topic, Int32(bytes.count), bytes.baseAddress, qos.rawValue, retain)
        }
    }

    func subscribe(messageID: inout Int32, filter: String, qos: MQTTQoS) -> Int32 {
        mosquitto_subscribe(raw, &messageID, filter, qos.rawValue)
    }

    func unsubscribe(messageID: inout Int32, filter: String) -> Int32 {
        mosquitto_unsubscribe(raw, &messageID, filter)
    }

    static func isValidTopic(_ topic: String) -> Bool {
        mosquitto_pub_topic_check(topic) == MOSQ_ERR_SUCCESS.rawValue
            && mosquitto_validate_utf8(topic, Int32(topic.utf8.count)) == MOSQ_ERR_SUCCESS.rawValue
    }

    static func isValidFilter(_ filter: String) -> Bool {
        mosquitto_sub_topic_check(filter) == MOSQ_ERR_SUCCESS.rawValue
            && mosquitto_validate_utf8(filter, Int32(filter.utf8.count)) == MOSQ_ERR_SUCCESS.rawValue
    }
}
