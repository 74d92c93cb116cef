import CMosquitto

/// Owns one `struct mosquitto *` and destroys it at deinit. Thin: each method is one
/// libmosquitto call returning its `MOSQ_ERR_*` code; ``MQTTEngine`` decides what runs on
/// which thread.
final class MosquittoHandle: @unchecked Sendable {
    // Safe: the pointer and the function table are immutable; libmosquitto guards its own state with mutexes once
    // mosquitto_threaded_set(true) is called (done in init), so publish, subscribe,
    // unsubscribe and disconnect may come from any thread while the network thread runs
    // mosquitto_loop. mosquitto_destroy runs in deinit, when no thread can use the handle.
    private let raw: OpaquePointer
    /// libmosquitto's functions (loaded and initialised once per process, never undone:
    /// mosquitto_lib_cleanup is only for process exit).
    private let mosquitto: cmosquitto_functions

    /// Throws ``MQTTError``: `.libraryMissing` when libmosquitto is not installed.
    init(clientID: String) throws(MQTTError) {
        let mosquitto = try Libmosquitto.load()
        // Clean session: the broker keeps nothing between connections; the engine
        // re-subscribes on every connect.
        guard let raw = mosquitto.new_client(clientID, true, nil) else {
            throw MQTTError(
                .invalidConfiguration, "libmosquitto cannot create a client with the ID \"\(clientID)\" (out of memory or not valid UTF-8).")
        }
        self.raw = raw
        self.mosquitto = mosquitto
        _ = mosquitto.threaded_set(raw, true)
        _ = mosquitto.int_option(raw, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        // Small control packets (SUBSCRIBE, PUBACK) must not wait for Nagle's algorithm to
        // meet the peer's delayed ACK (~40 ms on Linux each time).
        _ = mosquitto.int_option(raw, MOSQ_OPT_TCP_NODELAY, 1)
    }

    deinit {
        mosquitto.destroy(raw)
    }

    /// The context pointer handed back to every callback.
    func setContext(_ context: UnsafeMutableRawPointer) {
        mosquitto.user_data_set(raw, context)
    }

    func setCallbacks(
        connect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void,
        disconnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void,
        publish: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void,
        message: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafePointer<mosquitto_message>?) -> Void,
        subscribe: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, UnsafePointer<Int32>?) -> Void,
        unsubscribe: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void
    ) {
        mosquitto.connect_callback_set(raw, connect)
        mosquitto.disconnect_callback_set(raw, disconnect)
        mosquitto.publish_callback_set(raw, publish)
        mosquitto.message_callback_set(raw, message)
        mosquitto.subscribe_callback_set(raw, subscribe)
        mosquitto.unsubscribe_callback_set(raw, unsubscribe)
    }

    func setCredentials(username: String, password: String?) -> Int32 {
        mosquitto.username_pw_set(raw, username, password)
    }

    func setWill(topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool) -> Int32 {
        payload.withUnsafeBytes { bytes in
            mosquitto.will_set(raw, topic, Int32(bytes.count), bytes.baseAddress, qos.rawValue, retain)
        }
    }

    /// TLS with the broker's certificate checked against `caFile` or the CAs in `caDirectory`.
    func setTLS(caFile: String?, caDirectory: String?) -> Int32 {
        mosquitto.tls_set(raw, caFile, caDirectory, nil, nil, nil)
    }

    /// Starts a non-blocking connect (the DNS lookup does block): network thread only.
    func connectAsync(host: String, port: Int, keepAlive: Int) -> Int32 {
        mosquitto.connect_async(raw, host, Int32(port), Int32(keepAlive))
    }

    /// Closes any old socket and starts a new non-blocking connect: network thread only.
    func reconnectAsync() -> Int32 {
        mosquitto.reconnect_async(raw)
    }

    /// One round of network I/O, waiting up to `timeoutMilliseconds`; network thread only.
    func loop(timeoutMilliseconds: Int32) -> Int32 {
        mosquitto.loop(raw, timeoutMilliseconds, 1)
    }

    /// Queues DISCONNECT (when connected) and marks the client as disconnecting, which
    /// wakes the network thread. Any thread.
    func disconnect() -> Int32 {
        mosquitto.disconnect(raw)
    }

    /// True while a socket is open (connected or connecting).
    var hasSocket: Bool { mosquitto.socket(raw) >= 0 }

    func publish(messageID: inout Int32, topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool) -> Int32 {
        payload.withUnsafeBytes { bytes in
            mosquitto.publish(raw, &messageID, topic, Int32(bytes.count), bytes.baseAddress, qos.rawValue, retain)
        }
    }

    func subscribe(messageID: inout Int32, filter: String, qos: MQTTQoS) -> Int32 {
        mosquitto.subscribe(raw, &messageID, filter, qos.rawValue)
    }

    func unsubscribe(messageID: inout Int32, filter: String) -> Int32 {
        mosquitto.unsubscribe(raw, &messageID, filter)
    }

    func isValidTopic(_ topic: String) -> Bool {
        mosquitto.pub_topic_check(topic) == MOSQ_ERR_SUCCESS.rawValue
            && mosquitto.validate_utf8(topic, Int32(topic.utf8.count)) == MOSQ_ERR_SUCCESS.rawValue
    }

    func isValidFilter(_ filter: String) -> Bool {
        mosquitto.sub_topic_check(filter) == MOSQ_ERR_SUCCESS.rawValue
            && mosquitto.validate_utf8(filter, Int32(filter.utf8.count)) == MOSQ_ERR_SUCCESS.rawValue
    }
}
