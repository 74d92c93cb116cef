import CMosquitto
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The state and the network thread behind an ``MQTTClient``.
///
/// The network thread (started by `start()`, named "mqtt network") is the only one that
/// connects, reconnects and runs `mosquitto_loop`, so every libmosquitto callback runs on
/// it (`MQTTEngine+Callbacks.swift`). Callbacks never run user code: they update the state
/// below and yield to the events stream. Other threads only queue work into libmosquitto
/// (publish, subscribe, unsubscribe, disconnect), which wakes the network thread.
///
/// Why not `mosquitto_loop_start`: its `mosquitto_loop_forever` returns for good on a
/// "fatal" error (a failed TLS handshake, a protocol error, some DNS failures), leaving a
/// client that never reconnects, and its backoff is `min * (n+1)²`. This thread reconnects
/// after every failure with a doubling delay that `shutdown()` can interrupt at once.
final class MQTTEngine: @unchecked Sendable {
    // Safe: `handle` is used as described on MosquittoHandle; `configuration`, `logger`
    // and `continuation` are immutable (and the continuation is thread-safe); every
    // variable below `condition` is read and written only while `condition` is locked.
    let handle: MosquittoHandle
    let configuration: MQTTClient.Configuration
    let logger: Logger
    let continuation: AsyncStream<MQTTEvent>.Continuation

    private let condition = Condition()

    enum Phase { case idle, running, stopping, stopped }
    private var phase = Phase.idle
    /// The broker accepted the current connection (CONNACK 0).
    private var sessionUp = false
    /// `.connected` was emitted for the current connection.
    private var announced = false
    /// Every subscription the caller wants; made again on each connect.
    private var subscriptions: [String: MQTTQoS] = [:]
    /// SUBSCRIBEs sent on connect and not yet acknowledged: message ID → filter.
    private var resubscribing: [Int32: String] = [:]
    /// Callers awaiting a SUBACK or UNSUBACK, by message ID.
    private var waiters: [Int32: Waiter] = [:]
    /// Publishes handed to libmosquitto and not yet reported by on_publish.
    private var pending: [Int32: MQTTQoS] = [:]
    /// Why the current attempt or connection failed, as a callback saw it.
    private var failure: String?
    private var reconnectDelay: Duration
    private var threadFinished = false
    private var droppingEvents = false

    struct Waiter {
        let filter: String
        let isSubscribe: Bool
        let continuation: CheckedContinuation<Void, any Error>
    }

    init(
        configuration: MQTTClient.Configuration, logger: Logger,
        continuation: AsyncStream<MQTTEvent>.Continuation
    ) throws {
        if let problem = configuration.problem() { throw MQTTError(.invalidConfiguration, problem) }
        let handle = try MosquittoHandle(clientID: configuration.clientID)
        if let username = configuration.username {
            let rc = handle.setCredentials(username: username, password: configuration.password)
            if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.mosquitto(rc, "set the MQTT username") }
        }
        if let will = configuration.will {
            guard handle.isValidTopic(will.topic) else {
                throw MQTTError(.invalidTopic, "The last-will topic \"\(will.topic)\" is not a valid MQTT topic.")
            }
            let rc = handle.setWill(topic: will.topic, payload: will.payload, qos: will.qos, retain: will.retain)
            if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.mosquitto(rc, "set the last will on \"\(will.topic)\"") }
        }
        if configuration.url.usesTLS {
            let caFile = configuration.caFile
            if let caFile, access(caFile, R_OK) != 0 {
                throw MQTTError(.invalidConfiguration, "The CA file \(caFile) does not exist or cannot be read.")
            }
            let directory = caFile == nil ? MQTTClient.Configuration.systemCADirectory : nil
            let rc = handle.setTLS(caFile: caFile, caDirectory: directory)
            if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.mosquitto(rc, "set up TLS for \(configuration.url)") }
        }
        self.handle = handle
        self.configuration = configuration
        self.logger = logger
        self.continuation = continuation
        self.reconnectDelay = configuration.reconnectDelayMin
        // The context outlives every callback: the engine owns the handle, and the network
        // thread (the only one running callbacks) holds the engine until it ends.
        handle.setContext(Unmanaged.passUnretained(self).toOpaque())
        installCallbacks()
    }

    // MARK: Caller side (any thread)

    func start() throws {
        condition.lock()
        defer { condition.unlock() }
        switch phase {
        case .idle:
            phase = .running
            // The thread holds the engine until it ends.
            let context = Unmanaged.passRetained(self).toOpaque()
            var thread = pthread_t()
            let rc = pthread_create(&thread, nil, { argument in
                let engine = Unmanaged<MQTTEngine>.fromOpaque(argument!).takeRetainedValue()
                cmosquitto_set_thread_name("mqtt network")
                engine.runNetworkThread()
                return nil
            }, context)
            guard rc == 0 else {
                Unmanaged<MQTTEngine>.fromOpaque(context).release()
                phase = .idle
                throw MQTTError(.library, "The MQTT network thread could not be started (error \(rc)).")
            }
            pthread_detach(thread)
        case .running:
            return
        case .stopping, .stopped:
            throw MQTTError.shutDown
        }
    }

    func shutdown() {
        condition.lock()
        switch phase {
        case .idle:
            phase = .stopped
            threadFinished = true  // there never was one
            condition.unlock()
            continuation.finish()
            return
        case .running:
            phase = .stopping
            condition.broadcast()
        case .stopping, .stopped:
            break
        }
        condition.unlock()
        // Wakes the network thread out of mosquitto_loop when a socket is open; the
        // thread then flushes DISCONNECT (so the broker drops the will) and ends.
        _ = handle.disconnect()
        condition.lock()
        while !threadFinished { condition.wait() }
        condition.unlock()
    }

    var isConnected: Bool {
        condition.lock()
        defer { condition.unlock() }
        return announced
    }

    var pendingPublishes: Int {
        condition.lock()
        defer { condition.unlock() }
        return pending.count
    }

    func publish(topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool) throws -> Int32 {
        guard !topic.isEmpty, topic.utf8.count <= 65535, handle.isValidTopic(topic) else {
            throw MQTTError(.invalidTopic, "The topic \"\(topic)\" is not a valid MQTT topic to publish to (empty, wildcards or bad UTF-8).")
        }
        // Under the lock so that on_publish (which takes it) cannot report the message
        // before it is counted. libmosquitto only queues here (threaded mode): no I/O.
        condition.lock()
        defer { condition.unlock() }
        guard phase == .idle || phase == .running else { throw MQTTError.shutDown }
        if qos == .atMostOnce && !sessionUp {
            throw MQTTError(.notConnected, "Cannot publish to \"\(topic)\" with QoS 0: the client is not connected to the broker.")
        }
        var messageID: Int32 = 0
        let rc = handle.publish(messageID: &messageID, topic: topic, payload: payload, qos: qos, retain: retain)
        // QoS 1 and 2: libmosquitto queues the message and reports MOSQ_ERR_NO_CONN when
        // it cannot send it yet; it goes out after the next CONNACK.
        let queued = rc == MOSQ_ERR_NO_CONN.rawValue && qos != .atMostOnce
        guard rc == MOSQ_ERR_SUCCESS.rawValue || queued else {
            throw MQTTError.mosquitto(rc, "publish to \"\(topic)\"")
        }
        pending[messageID] = qos
        return messageID
    }

    func subscribe(_ filter: String, qos: MQTTQoS) async throws {
        guard !filter.isEmpty, filter.utf8.count <= 65535, handle.isValidFilter(filter) else {
            throw MQTTError(.invalidTopic, "The topic filter \"\(filter)\" is not valid MQTT.")
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            condition.lock()
            defer { condition.unlock() }
            guard phase == .idle || phase == .running else { return continuation.resume(throwing: MQTTError.shutDown) }
            subscriptions[filter] = qos
            // Not connected: it is made (and acknowledged) before the next `.connected`.
            guard sessionUp else { return continuation.resume() }
            var messageID: Int32 = 0
            let rc = handle.subscribe(messageID: &messageID, filter: filter, qos: qos)
            if rc == MOSQ_ERR_NO_CONN.rawValue { return continuation.resume() }
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                subscriptions[filter] = nil
                return continuation.resume(throwing: MQTTError.mosquitto(rc, "subscribe to \"\(filter)\""))
            }
            waiters[messageID] = Waiter(filter: filter, isSubscribe: true, continuation: continuation)
        }
    }

    func unsubscribe(_ filter: String) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            condition.lock()
            defer { condition.unlock() }
            guard phase == .idle || phase == .running else { return continuation.resume(throwing: MQTTError.shutDown) }
            guard subscriptions.removeValue(forKey: filter) != nil, sessionUp else { return continuation.resume() }
            var messageID: Int32 = 0
            let rc = handle.unsubscribe(messageID: &messageID, filter: filter)
            if rc == MOSQ_ERR_NO_CONN.rawValue { return continuation.resume() }
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                return continuation.resume(throwing: MQTTError.mosquitto(rc, "unsubscribe from \"\(filter)\""))
            }
            waiters[messageID] = Waiter(filter: filter, isSubscribe: false, continuation: continuation)
        }
    }

    // MARK: Network thread

    private func runNetworkThread() {
        let url = configuration.url
        var rc = handle.connectAsync(host: url.host, port: url.port, keepAlive: configuration.keepAlive)
        while true {
            if rc == MOSQ_ERR_SUCCESS.rawValue {
                // A bounded wait: publishes and disconnect wake it early anyway.
                rc = handle.loop(timeoutMilliseconds: 1000)
            }
            let fallback = rc == MOSQ_ERR_SUCCESS.rawValue ? nil : Mosquitto.sentence(rc)
            if isStopping { break }
            guard let fallback else { continue }
            let delay = connectionEnded(reason: fallback)
            guard waitUnlessStopping(delay) else { break }
            rc = handle.reconnectAsync()
        }
        // Send DISCONNECT (again: the caller's may have come before a reconnect) and let
        // it out, so the broker discards the will. Bounded: a dead peer cannot hold us.
        _ = handle.disconnect()
        let deadline = ContinuousClock.now + .seconds(2)
        while handle.hasSocket && ContinuousClock.now < deadline {
            if handle.loop(timeoutMilliseconds: 100) != MOSQ_ERR_SUCCESS.rawValue { break }
        }
        finish()
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return phase != .running
    }

    /// Waits `delay` unless shutdown begins first; false when it did.
    private func waitUnlessStopping(_ delay: Duration) -> Bool {
        let until = Condition.Deadline(in: delay)
        condition.lock()
        defer { condition.unlock() }
        while phase == .running {
            if !condition.wait(until: until) { break }
        }
        return phase == .running
    }

    /// The attempt or connection is over: reports it and returns the delay before retrying.
    private func connectionEnded(reason fallback: String) -> Duration {
        condition.lock()
        let reason = failure ?? fallback
        failure = nil
        let wasAnnounced = announced
        endSession(resumingWaitersWith: nil)
        let delay = reconnectDelay
        reconnectDelay = min(reconnectDelay * 2, configuration.reconnectDelayMax)
        // Debug only: the client's owner reports state changes (once each), not every attempt.
        if wasAnnounced {
            logger.debug("MQTT connection lost: \(reason)")
            emit(.disconnected(reason: reason))
        } else {
            logger.debug("MQTT connection failed: \(reason) Retrying in \(delay).")
            emit(.connectionFailed(reason: reason, retryIn: delay))
        }
        condition.unlock()
        return delay
    }

    /// Forgets the connection's state (lock held). QoS 0 publishes still queued are lost
    /// with the socket (libmosquitto drops them on reconnect); QoS 1 and 2 stay pending and
    /// are sent again. Waiting callers resume: their subscription is made on the next connect.
    private func endSession(resumingWaitersWith error: MQTTError?) {
        sessionUp = false
        announced = false
        resubscribing.removeAll()
        pending = pending.filter { $0.value != .atMostOnce }
        for waiter in waiters.values {
            if let error { waiter.continuation.resume(throwing: error) } else { waiter.continuation.resume() }
        }
        waiters.removeAll()
    }

    private func finish() {
        condition.lock()
        let wasAnnounced = announced
        endSession(resumingWaitersWith: MQTTError.shutDown)
        pending.removeAll()
        phase = .stopped
        threadFinished = true
        condition.broadcast()
        if wasAnnounced { emit(.disconnected(reason: "The client disconnected.")) }
        condition.unlock()
        logger.info("MQTT client shut down")
        continuation.finish()
    }

    /// Yields an event (lock held, so events keep the order of the state changes).
    private func emit(_ event: MQTTEvent) {
        switch continuation.yield(event) {
        case .dropped:
            if !droppingEvents {
                droppingEvents = true
                logger.warning("MQTT events are not consumed fast enough; dropping new ones")
            }
        case .enqueued, .terminated:
            droppingEvents = false
        @unknown default:
            break
        }
    }

    // MARK: Callbacks (network thread; see MQTTEngine+Callbacks.swift)

    func didConnect(_ code: Int32) {
        guard code == 0 else {
            condition.lock()
            failure = Mosquitto.connackSentence(code)
            condition.unlock()
            return
        }
        condition.lock()
        defer { condition.unlock() }
        sessionUp = true
        failure = nil
        reconnectDelay = configuration.reconnectDelayMin
        for (filter, qos) in subscriptions.sorted(by: { $0.key < $1.key }) {
            var messageID: Int32 = 0
            let rc = handle.subscribe(messageID: &messageID, filter: filter, qos: qos)
            if rc == MOSQ_ERR_SUCCESS.rawValue {
                resubscribing[messageID] = filter
            } else {
                logger.warning("MQTT cannot subscribe again to \(filter): \(Mosquitto.sentence(rc))")
            }
        }
        announceIfReady()
    }

    /// Emits `.connected` once the broker acknowledged every re-made subscription (lock held).
    private func announceIfReady() {
        guard sessionUp, !announced, resubscribing.isEmpty else { return }
        announced = true
        logger.debug("MQTT connected to \(configuration.url)")
        emit(.connected)
    }

    func didDisconnect(_ code: Int32) {
        guard code != 0 else { return }
        let reason = Mosquitto.sentence(code)  // now, while errno still holds the cause
        condition.lock()
        if failure == nil { failure = reason }
        condition.unlock()
    }

    func didPublish(_ messageID: Int32) {
        condition.lock()
        pending[messageID] = nil
        emit(.published(messageID: messageID))
        condition.unlock()
    }

    func didReceive(_ message: MQTTMessage) {
        condition.lock()
        emit(.message(message))
        condition.unlock()
    }

    func didSubscribe(_ messageID: Int32, granted: [Int32]) {
        // SUBACK 0x80: the broker refused the filter (access control).
        let refused = granted.contains { $0 < 0 || $0 > 2 }
        condition.lock()
        defer { condition.unlock() }
        if let filter = resubscribing.removeValue(forKey: messageID) {
            if refused { logger.warning("MQTT broker refused the subscription to \(filter) on reconnect") }
            announceIfReady()
        } else if let waiter = waiters.removeValue(forKey: messageID) {
            if refused {
                subscriptions[waiter.filter] = nil
                waiter.continuation.resume(
                    throwing: MQTTError(.refused, "The broker refused the subscription to \"\(waiter.filter)\"."))
            } else {
                waiter.continuation.resume()
            }
        }
    }

    func didUnsubscribe(_ messageID: Int32) {
        condition.lock()
        let waiter = waiters.removeValue(forKey: messageID)
        condition.unlock()
        waiter?.continuation.resume()
    }
}
