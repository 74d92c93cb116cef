import FleetCore
import FleetRPC
import JSONRPC
import FleetWire
import Foundation
import Logging
import MQTT
import Synchronization

/// The bridge's state: what was last published per board, the outbox, the commands running.
/// Every fleet event, broker event and timer tick passes through this actor in turn.
actor MQTTBridgeCore {
    /// What the broker holds (retained) for one board, as last published.
    struct Published: Sendable, Hashable {
        var name: String?
        var available: Bool?
        var led: Bool?
        var temperature: Int?
        /// The other sensors' payloads, by sensor name.
        var sensors: [String: String] = [:]
        /// The sensors whose discovery configs were published.
        var discovered: Set<String> = []
        var state: StateKey?
    }

    /// The parts of a board's state whose change is worth a new `state` message (not its
    /// RSSI or the age of its reading, which change all the time).
    struct StateKey: Sendable, Hashable {
        var name: String
        var alias: String?
        var state: BoardPhase
        var led: Bool?
        var desiredLed: Bool?
        var celsius: Int?
        var adapter: String?
        var profile: String?
        var sensors: [String: Double] = [:]
    }

    let configuration: MQTTBridge.Configuration
    let topics: FleetTopics
    let gateway: String
    let discovery: HomeAssistantDiscovery?
    let client: MQTTClient
    let fleet: Fleet
    let logger: Logger
    nonisolated let statusBox: Mutex<MQTTBridge.Status>

    private var outbox: MQTTOutbox
    private var published: [FleetCore.BoardAddress: Published] = [:]
    private var connected = false
    private var runningCommands = 0
    private var waitingForSend: [Int32: CheckedContinuation<Void, Never>] = [:]

    init(configuration: MQTTBridge.Configuration, broker: String, client: MQTTClient, fleet: Fleet, logger: Logger) {
        self.configuration = configuration
        topics = FleetTopics(prefix: configuration.topicPrefix)
        gateway = configuration.gateway
        discovery =
            configuration.discoveryPrefix.isEmpty
            ? nil
            : HomeAssistantDiscovery(
                discoveryPrefix: configuration.discoveryPrefix, topics: topics,
                gateway: configuration.gateway, expireAfter: Int(configuration.republishInterval.components.seconds) * 5)
        self.client = client
        self.fleet = fleet
        self.logger = logger
        outbox = MQTTOutbox(limit: configuration.queueLimit)
        statusBox = Mutex(
            MQTTBridge.Status(broker: broker, gateway: configuration.gateway, connected: false, queued: 0, dropped: 0))
    }

    nonisolated var status: MQTTBridge.Status { statusBox.withLock { $0 } }

    /// The topic filters the bridge subscribes to.
    nonisolated var subscriptions: [String] {
        var filters: [String] = []
        if let discovery { filters.append("\(discovery.discoveryPrefix)/status") }
        if configuration.commands {
            filters += ["\(topics.prefix)/\(gateway)/+/led/set", topics.allLEDSet(), topics.allLEDSet(gateway)]
        }
        return filters
    }

    // MARK: Broker

    func handle(_ event: MQTTEvent) async {
        switch event {
        case .connected:
            connected = true
            loggedFailure = false
            logger.notice("connected to the MQTT broker")
            await publishEverything()
        case .disconnected(let reason):
            if connected {
                logger.warning("lost the MQTT broker; reconnecting with backoff", metadata: ["reason": "\(reason)"])
                loggedFailure = true  // the failed attempts that follow are the same state
            }
            connected = false
            updateStatus()
        case .connectionFailed(let reason, let retryIn):
            // Logged once per state change: the first failure since the last connection.
            if !loggedFailure {
                logger.warning(
                    "cannot reach the MQTT broker; trying again with backoff",
                    metadata: ["reason": "\(reason)", "retry.in": "\(retryIn)"])
                loggedFailure = true
            }
            connected = false
            updateStatus()
        case .message(let message):
            await received(message)
        case .published(let messageID):
            waitingForSend.removeValue(forKey: messageID)?.resume()
            flush()
        }
    }

    private var loggedFailure = false

    /// Publishes the gateway's status and every board's retained topics (and discovery)
    /// afresh: after a (re)connect, when Home Assistant comes online, after missed events.
    func publishEverything() async {
        // One batch: what was queued for the same topics is replaced, not sent twice.
        batching = true
        put(topics.status(gateway), "online", retain: true)
        published = [:]
        for board in await fleet.snapshots() {
            update(board)
        }
        batching = false
        flush()
    }

    /// Queue without flushing (``publishEverything()``).
    private var batching = false

    /// Temperatures are retained and republished at least every `republishInterval`, so
    /// that a sensor's `expire_after` only expires when a board is really gone.
    func republishTemperatures() async {
        for board in await fleet.snapshots() {
            guard let reading = board.temperature, reading.age(at: .now) < configuration.republishInterval * 5 else {
                continue
            }
            put(topics.temperature(gateway, board.address.rawValue), "\(reading.celsius.degrees)", retain: true, isTemperature: true)
            for (sensor, reading) in board.readings
            where sensor != BoardProfile.temperatureSensor && reading.age(at: .now) < configuration.republishInterval * 5 {
                put(
                    topics.sensor(gateway, board.address.rawValue, sensor), SensorNumber.text(reading.value), retain: true,
                    isTemperature: true)
            }
        }
    }

    /// Clean shutdown: the gateway and its boards say `offline` (a clean disconnect sends
    /// no last will), then the client disconnects.
    func goOffline() async {
        if connected {
            for address in published.keys {
                put(topics.availability(gateway, address.rawValue), "offline", retain: true)
            }
            if let id = send(.init(topic: topics.status(gateway), payload: Array("offline".utf8), retain: true)) {
                // Until the broker has it, or 2 s (the broker may be going away too).
                let timeout = Task { [weak self] in
                    try? await Task.sleep(for: .seconds(2))
                    await self?.stopWaiting(for: id)
                }
                await waitUntilSent(id)
                timeout.cancel()
            }
        }
        client.shutdown()
    }

    private func waitUntilSent(_ id: Int32) async {
        await withCheckedContinuation { waitingForSend[id] = $0 }
    }

    private func stopWaiting(for id: Int32) {
        waitingForSend.removeValue(forKey: id)?.resume()
    }

    // MARK: Fleet

    func handle(_ event: FleetEvent) async {
        switch event {
        case .boardRemoved(let address):
            forget(address)
        case .temperature(let address, let celsius) where published[address]?.temperature == celsius.degrees:
            // The same value again (each notification): nothing to publish, no hop to the board.
            return
        case .sensor(let address, let name, let value, _) where published[address]?.sensors[name] == SensorNumber.text(value):
            return
        case .boardAdded(let address, _), .boardPhaseChanged(let address, _, _), .temperature(let address, _),
            .sensor(let address, _, _, _), .ledApplied(let address, _):
            guard let board = await fleet.snapshot(of: address) else { return }
            update(board)
        case .adapterPowered:
            break
        }
    }

    /// Publishes what changed of `board` since it was last published.
    private func update(_ board: BoardSnapshot) {
        let address = board.address.rawValue
        var last = published[board.address] ?? Published()
        let name = board.alias ?? board.name ?? address
        let sensors = Set(board.profile.sensors.map(\.name))
        if let discovery, last.name != name || last.discovered != sensors {
            put(discovery.lightTopic(address), json(discovery.light(address, name: name)), retain: true)
            for sensor in board.profile.sensors {
                put(
                    discovery.sensorTopic(address, sensor: sensor.name),
                    json(discovery.sensor(address, name: name, sensor: sensor)), retain: true)
            }
            // A sensor the board's profile no longer has: its config goes.
            for gone in last.discovered.subtracting(sensors) { put(discovery.sensorTopic(address, sensor: gone), "", retain: true) }
            last.name = name
            last.discovered = sensors
        }
        let available = ![.absent, .waitingForAdapter, .failed].contains(board.phase)
        if last.available != available {
            put(topics.availability(gateway, address), available ? "online" : "offline", retain: true)
            last.available = available
        }
        if let led = board.appliedLED, last.led != led {
            put(topics.led(gateway, address), led ? "ON" : "OFF", retain: true)
            last.led = led
        }
        if let celsius = board.temperature?.celsius.degrees, last.temperature != celsius {
            put(topics.temperature(gateway, address), "\(celsius)", retain: true, isTemperature: true)
            last.temperature = celsius
        }
        for (sensor, reading) in board.readings where sensor != BoardProfile.temperatureSensor && sensors.contains(sensor) {
            let payload = SensorNumber.text(reading.value)
            guard last.sensors[sensor] != payload else { continue }
            put(topics.sensor(gateway, address, sensor), payload, retain: true, isTemperature: true)
            last.sensors[sensor] = payload
        }
        let info = BoardInfo(board)
        let key = StateKey(
            name: info.name, alias: info.alias, state: info.state, led: info.led, desiredLed: info.desiredLed,
            celsius: info.temperature?.value.degrees, adapter: info.adapter, profile: info.profile,
            sensors: board.readings.mapValues(\.value))
        if last.state != key {
            let readingOnly = last.state.map { $0.celsius != key.celsius || $0.sensors != key.sensors } ?? false
            put(topics.state(gateway, address), json(info), retain: true, isTemperature: readingOnly)
            last.state = key
        }
        published[board.address] = last
    }

    /// A forgotten board: its retained topics and discovery configs are removed (an empty
    /// retained message deletes one).
    private func forget(_ address: FleetCore.BoardAddress) {
        let text = address.rawValue
        let last = published[address] ?? Published()
        var cleared = [
            topics.availability(gateway, text), topics.led(gateway, text), topics.temperature(gateway, text),
            topics.state(gateway, text),
        ] + last.sensors.keys.map { topics.sensor(gateway, text, $0) }
        if let discovery {
            cleared += [discovery.lightTopic(text)]
                + last.discovered.union([BoardProfile.temperatureSensor]).map { discovery.sensorTopic(text, sensor: $0) }
        }
        for topic in cleared { put(topic, "", retain: true) }
        published[address] = nil
    }

    // MARK: Commands

    private func received(_ message: MQTTMessage) async {
        if let discovery, message.topic == "\(discovery.discoveryPrefix)/status" {
            if message.text == "online" { await publishEverything() }
            return
        }
        guard configuration.commands else { return }
        if message.topic == topics.allLEDSet() || message.topic == topics.allLEDSet(gateway) {
            fleetCommand(message)
            return
        }
        let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // <prefix…>/<gateway>/<board>/led/set
        guard levels.count >= 4, levels.suffix(2) == ["led", "set"],
            let address = FleetTopics.address(ofBoardID: levels[levels.count - 3]).flatMap(FleetCore.BoardAddress.init)
        else {
            logger.warning("ignored an MQTT command on an unknown topic", metadata: ["mqtt.topic": "\(message.topic)"])
            return
        }
        let on: Bool
        switch message.text.trimmingCharacters(in: .whitespacesAndNewlines).uppercased() {
        case "ON": on = true
        case "OFF": on = false
        default:
            logger.warning(
                "ignored an LED command that is neither ON nor OFF",
                metadata: ["mqtt.topic": "\(message.topic)", "payload": "\(message.text.prefix(64))"])
            return
        }
        run("led \(on ? "on" : "off") \(address)") { fleet in
            let result = await fleet.setLED(Selection([.address(address)]), on: on)
            return result.outcomes.isEmpty ? nil : result
        } then: { _ in nil }
    }

    private func fleetCommand(_ message: MQTTMessage) {
        let command: FleetLEDCommand
        do {
            command = try JSONCodec.decode(FleetLEDCommand.self, from: message.payload)
        } catch {
            logger.warning(
                "ignored a fleet-wide LED command that is not {\"on\": true|false, \"request\": \"<id>\"}",
                metadata: ["mqtt.topic": "\(message.topic)", "payload": "\(message.text.prefix(64))"])
            return
        }
        if let problem = command.problem {
            logger.warning("ignored a fleet-wide LED command", metadata: ["mqtt.topic": "\(message.topic)", "problem": "\(problem)"])
            return
        }
        let timeout = command.timeoutMs.map { Duration.milliseconds($0) }
        run("led \(command.on ? "on" : "off") for request \(command.request)") { fleet in
            await fleet.setLED(.all, on: command.on, timeout: timeout)
        } then: { [topics, gateway] result in
            guard let result else { return nil }
            return (topics.result(gateway, command.request), result)
        }
    }

    /// Runs a command from the broker in its own task (at most ``MQTTBridge/concurrentCommands``
    /// at once) and publishes what `then` makes of its result.
    private func run(
        _ what: String, _ command: @escaping @Sendable (Fleet) async -> FleetResult<Done>?,
        then reply: @escaping @Sendable (FleetResult<Done>?) -> (String, FleetResult<Done>)?
    ) {
        guard runningCommands < MQTTBridge.concurrentCommands else {
            logger.warning("ignored an MQTT command: too many running", metadata: ["command": "\(what)"])
            return
        }
        runningCommands += 1
        logger.info("MQTT command", metadata: ["command": "\(what)"])
        let fleet = self.fleet
        Task {
            let result = await command(fleet)
            self.finished(reply(result))
        }
    }

    private func finished(_ reply: (String, FleetResult<Done>)?) {
        runningCommands -= 1
        if let (topic, result) = reply { put(topic, json(result), retain: false) }
    }

    // MARK: Outbox

    private func json(_ value: some Encodable) -> String {
        (try? JSONCodec.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private func put(_ topic: String, _ payload: String, retain: Bool, isTemperature: Bool = false) {
        outbox.put(.init(topic: topic, payload: Array(payload.utf8), retain: retain, isTemperature: isTemperature))
        if !batching { flush() }
    }

    /// Hands queued messages to the client while it is connected and has room.
    private func flush() {
        while connected, client.pendingPublishes < MQTTBridge.inFlightLimit, let message = outbox.take() {
            if send(message) == nil {
                outbox.put(message)
                break
            }
        }
        updateStatus()
    }

    private func send(_ message: MQTTOutbox.Message) -> Int32? {
        do {
            return try client.publish(topic: message.topic, payload: message.payload, qos: .atLeastOnce, retain: message.retain)
        } catch {
            logger.debug("publish failed; kept for later", metadata: ["mqtt.topic": "\(message.topic)", "error": "\(error)"])
            return nil
        }
    }

    private func updateStatus() {
        let queued = outbox.count
        let dropped = outbox.dropped
        let connected = self.connected
        statusBox.withLock {
            $0.queued = queued
            $0.dropped = dropped
            $0.connected = connected
        }
    }
}
