import FleetModel
import FleetRPC
import FleetRPCClient
import JSONRPC
import Foundation
import Logging
import MQTT
import Synchronization

/// The bridge's state: what was last published per board, the outbox, the commands running.
/// Every daemon event, broker event and timer tick passes through this actor in turn.
actor MQTTBridgeCore {
    /// What a sensor's discovery config says beyond its names.
    struct Discovered: Sendable, Hashable {
        var unit: String?
        var deviceClass: String?
        var decimals: Int?
    }

    /// What the broker holds (retained) for one board, as last published.
    struct Published: Sendable, Hashable {
        var name: String?
        var available: Bool?
        var led: Bool?
        var temperature: Int?
        /// The other sensors' values, by sensor name.
        var sensors: [String: Double] = [:]
        /// The sensors whose discovery configs were published, with what each config said.
        var discovered: [String: Discovered] = [:]
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
    let logger: Logger
    /// The daemon's socket connection while it is up.
    private var rpc: FleetRPCClient?
    nonisolated let statusBox: Mutex<MQTTBridge.Status>

    private var outbox: MQTTOutbox
    private var published: [BoardAddress: Published] = [:]
    private var connected = false
    private var runningCommands = 0
    private var waitingForSend: [Int32: CheckedContinuation<Void, Never>] = [:]

    init(configuration: MQTTBridge.Configuration, broker: String, client: MQTTClient, logger: Logger) {
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

    // MARK: Daemon

    /// Connected to the daemon (again): everything is published afresh.
    func daemonConnected(_ client: FleetRPCClient) async {
        rpc = client
        await publishEverything()
    }

    /// The daemon went away: the gateway and its boards say `offline` (retained) until it
    /// is back; commands meanwhile are refused with a warning.
    func daemonLost() {
        rpc?.close()
        rpc = nil
        guard daemonOnline != false else { return }
        daemonOnline = false
        batching = true
        for address in published.keys {
            put(topics.availability(gateway, address.rawValue), "offline", retain: true)
            published[address]?.available = false
        }
        put(topics.status(gateway), "offline", retain: true)
        batching = false
        flush()
    }

    /// Whether the gateway was last said online (nil: nothing said yet).
    private var daemonOnline: Bool?

    /// The boards as the daemon lists them (all, or those of `select`); empty when it
    /// cannot be asked.
    private func boards(_ select: Selection? = nil) async -> [BoardInfo] {
        guard let rpc else { return [] }
        do {
            return try await rpc.call(FleetMethods.BoardsList.self, .init(select: select)).boards
        } catch {
            logger.debug("boards.list failed", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Publishes the gateway's status and every board's retained topics (and discovery)
    /// afresh: after a (re)connect to the broker or the daemon, when Home Assistant comes
    /// online, after missed events.
    func publishEverything() async {
        guard rpc != nil else {
            // The daemon is away: a (restarted) broker learns again that the gateway is
            // offline. Before the first try of the daemon nothing is said (at start the
            // broker usually answers first; the daemon a moment later).
            if daemonOnline == false {
                daemonOnline = nil
                daemonLost()
            }
            return
        }
        let boards = await boards()
        guard rpc != nil else { return }
        // One batch: what was queued for the same topics is replaced, not sent twice.
        batching = true
        daemonOnline = true
        put(topics.status(gateway), "online", retain: true)
        published = [:]
        for board in boards {
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
        let fresh = configuration.republishInterval * 5
        func isFresh(_ ageMs: Int?) -> Bool { ageMs.map { Duration.milliseconds($0) < fresh } ?? false }
        for board in await boards() {
            let address = board.address.rawValue
            if let reading = board.temperature, reading.age < fresh {
                put(topics.temperature(gateway, address), "\(reading.value.degrees)", retain: true, isTemperature: true)
            }
            for (sensor, info) in board.sensors ?? [:] where sensor != TemperatureReading.sensor && isFresh(info.ageMs) {
                guard let value = info.value else { continue }
                put(topics.sensor(gateway, address, sensor), SensorNumber.text(value, decimals: info.decimals), retain: true, isTemperature: true)
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

    func handle(_ event: EventNotification) async {
        guard let text = event.address, let address = BoardAddress(text) else { return }
        switch event.detail {
        case .removed:
            forget(address)
            return
        case .temperature(let celsius) where celsius == published[address]?.temperature:
            // The same value again (each notification): nothing to publish, no call.
            return
        case .sensor(let name, let value, _) where published[address]?.sensors[name] == value:
            return
        case .adapter:
            return
        default:
            break
        }
        guard let board = await boards(Selection([.address(address)])).first else { return }
        update(board)
    }

    /// Publishes what changed of `board` since it was last published.
    private func update(_ board: BoardInfo) {
        let address = board.address.rawValue
        var last = published[board.address] ?? Published()
        let name = board.alias ?? (board.name.isEmpty ? address : board.name)
        // The profile's sensors, the temperature first, then by name.
        func rank(_ name: String) -> (Int, String) { (name == TemperatureReading.sensor ? 0 : 1, name) }
        let sensors: [(key: String, value: SensorInfo)] = (board.sensors ?? [:]).sorted { rank($0.key) < rank($1.key) }
        if let discovery {
            // Each sensor's config: published again when the board's name or the sensor's
            // unit, device class or decimals change (SIGHUP may change its profile).
            let configs = Dictionary(uniqueKeysWithValues: sensors.map { sensor, info in
                (sensor, Discovered(unit: info.unit, deviceClass: info.deviceClass, decimals: info.decimals))
            })
            if last.name != name {
                put(discovery.lightTopic(address), json(discovery.light(address, name: name)), retain: true)
            }
            for (sensor, info) in sensors where last.name != name || last.discovered[sensor] != configs[sensor] {
                let config = discovery.sensor(
                    address, name: name, sensor: sensor, unit: info.unit, deviceClass: info.deviceClass, decimals: info.decimals)
                put(discovery.sensorTopic(address, sensor: sensor), json(config), retain: true)
            }
            // A sensor the board's profile no longer has: its config goes.
            for gone in last.discovered.keys where configs[gone] == nil {
                put(discovery.sensorTopic(address, sensor: gone), "", retain: true)
            }
            last.name = name
            last.discovered = configs
        }
        let available = ![.absent, .waitingForAdapter, .failed].contains(board.state)
        if last.available != available {
            put(topics.availability(gateway, address), available ? "online" : "offline", retain: true)
            last.available = available
        }
        if let led = board.led, last.led != led {
            put(topics.led(gateway, address), led ? "ON" : "OFF", retain: true)
            last.led = led
        }
        if let celsius = board.temperature?.value.degrees, last.temperature != celsius {
            put(topics.temperature(gateway, address), "\(celsius)", retain: true, isTemperature: true)
            last.temperature = celsius
        }
        var values: [String: Double] = [:]
        for (sensor, info) in sensors {
            guard let value = info.value else { continue }
            values[sensor] = value
            guard sensor != TemperatureReading.sensor else { continue }
            guard last.sensors[sensor] != value else { continue }
            put(topics.sensor(gateway, address, sensor), SensorNumber.text(value, decimals: info.decimals), retain: true, isTemperature: true)
            last.sensors[sensor] = value
        }
        let key = StateKey(
            name: board.name, alias: board.alias, state: board.state, led: board.led, desiredLed: board.desiredLed,
            celsius: board.temperature?.value.degrees, adapter: board.adapter, profile: board.profile, sensors: values)
        if last.state != key {
            let readingOnly = last.state.map { $0.celsius != key.celsius || $0.sensors != key.sensors } ?? false
            put(topics.state(gateway, address), json(board), retain: true, isTemperature: readingOnly)
            last.state = key
        }
        published[board.address] = last
    }

    /// A forgotten board: its retained topics and discovery configs are removed (an empty
    /// retained message deletes one).
    private func forget(_ address: BoardAddress) {
        let text = address.rawValue
        let last = published[address] ?? Published()
        var cleared = [
            topics.availability(gateway, text), topics.led(gateway, text), topics.temperature(gateway, text),
            topics.state(gateway, text),
        ] + last.sensors.keys.map { topics.sensor(gateway, text, $0) }
        if let discovery {
            cleared += [discovery.lightTopic(text)]
                + Set(last.discovered.keys).union([TemperatureReading.sensor]).map { discovery.sensorTopic(text, sensor: $0) }
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
            let address = FleetTopics.address(ofBoardID: levels[levels.count - 3]).flatMap(BoardAddress.init)
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
        run("led \(on ? "on" : "off") \(address)") { rpc in
            let result = try await rpc.call(FleetMethods.LedSet.self, .init(select: Selection([.address(address)]), on: on), timeout: nil)
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
        run("led \(command.on ? "on" : "off") for request \(command.request)") { rpc in
            try await rpc.call(FleetMethods.LedSet.self, .init(select: .all, on: command.on, timeoutMs: command.timeoutMs), timeout: nil)
        } then: { [topics, gateway] result in
            guard let result else { return nil }
            return (topics.result(gateway, command.request), result)
        }
    }

    /// Runs a command from the broker in its own task (at most ``MQTTBridge/concurrentCommands``
    /// at once) through the daemon, and publishes what `then` makes of its result.
    private func run(
        _ what: String, _ command: @escaping @Sendable (FleetRPCClient) async throws -> FleetResult<Done>?,
        then reply: @escaping @Sendable (FleetResult<Done>?) -> (String, FleetResult<Done>)?
    ) {
        guard let rpc else {
            logger.warning("ignored an MQTT command: blefleetd is not reachable", metadata: ["command": "\(what)"])
            return
        }
        guard runningCommands < MQTTBridge.concurrentCommands else {
            logger.warning("ignored an MQTT command: too many running", metadata: ["command": "\(what)"])
            return
        }
        runningCommands += 1
        logger.info("MQTT command", metadata: ["command": "\(what)"])
        let logger = self.logger
        Task {
            var result: FleetResult<Done>?
            do {
                result = try await command(rpc)
            } catch {
                logger.warning("an MQTT command failed", metadata: ["command": "\(what)", "error": "\(error)"])
            }
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
