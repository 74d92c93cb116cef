import ArgumentParser
import BlectlCore
import FleetRPC
import FoundationEssentials
import JSONRPC
import MQTT
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `blectl --broker URL`: the fleet of every gateway on an MQTT broker (`blefleet-mqtt(7)`).
/// One connection per command; every wait is bounded by `--timeout`.
final class BrokerSession: Sendable {
    let options: GlobalOptions
    let topics: FleetTopics
    let url: MQTTURL
    private let client: MQTTClient
    private let collected = Collected()
    private let pump: Task<Void, Never>

    /// What the client's events brought, shared with the task that reads them; ``changed()``
    /// wakes the one waiter after each event.
    final class Collected: Sendable {
        let inbox = Mutex<[MQTTMessage]>([])
        let connection = Mutex<Result<Void, BrokerFailure>?>(nil)
        private let wakeup = Mutex<(waiter: CheckedContinuation<Void, Never>?, pending: Bool)>((nil, false))

        /// Something arrived (or a deadline passed): the waiter looks again.
        func changed() {
            let waiter = wakeup.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter else {
                    state.pending = true
                    return nil
                }
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }

        /// Returns at the next ``changed()`` (at once if one came since the last return).
        func nextChange() async {
            await withCheckedContinuation { continuation in
                let now = wakeup.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }

    struct BrokerFailure: Error {
        let reason: String
    }

    /// The retained state of the broker as the gateways published it.
    struct Snapshot {
        /// Gateway name → online.
        var gateways: [String: Bool] = [:]
        /// Every board's `state` message, by gateway.
        var boards: [(gateway: String, board: BoardInfo)] = []
    }

    init(_ options: GlobalOptions, broker: String) throws {
        self.options = options
        topics = FleetTopics(prefix: options.topicPrefix)
        var password: String?
        if let path = options.brokerPasswordFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                Output.error("blectl: --broker-password-file: cannot read \(path).")
                throw ExitCode(ExitStatus.usage.rawValue)
            }
            password = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        }
        do {
            url = try MQTTURL(broker)
            client = try MQTTClient(
                configuration: MQTTClient.Configuration(
                    url: url, clientID: "blectl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                    username: options.brokerUser, password: password,
                    reconnectDelayMin: .milliseconds(200), reconnectDelayMax: .seconds(1)))
        } catch let error as MQTTError where error.kind == .libraryMissing {
            Output.error("blectl --broker needs libmosquitto1: apt install libmosquitto1")
            Output.error("blectl: \(error)")
            throw ExitCode(ExitStatus.unavailable.rawValue)
        } catch {
            Output.error("blectl: --broker: \(error)")
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        let client = self.client
        let collected = self.collected
        pump = Task {
            for await event in client.events {
                switch event {
                case .connected: collected.connection.withLock { $0 = .success(()) }
                case .connectionFailed(let reason, _):
                    collected.connection.withLock { if $0 == nil { $0 = .failure(BrokerFailure(reason: reason)) } }
                case .message(let message): collected.inbox.withLock { $0.append(message) }
                case .disconnected, .published: break
                }
                collected.changed()
            }
        }
    }

    deinit {
        client.shutdown()
        pump.cancel()
    }

    private var deadline: ContinuousClock.Instant { .now + .milliseconds(Int64(options.timeout * 1000)) }

    /// Waits until `condition` holds, looking again after each event; false at `until`.
    private func wait(until: ContinuousClock.Instant, _ condition: () -> Bool) async -> Bool {
        let collected = self.collected
        let deadline = Task {
            guard (try? await Task.sleep(until: until)) != nil else { return }
            collected.changed()
        }
        defer { deadline.cancel() }
        while !condition() {
            guard ContinuousClock.now < until else { return false }
            await collected.nextChange()
        }
        return true
    }

    /// Connects, or prints why not and throws exit status 69.
    func connect() async throws {
        try client.start()
        let ended = await wait(until: deadline) { collected.connection.withLock { $0 != nil } }
        let outcome = collected.connection.withLock { $0 }
        guard ended, case .success = outcome else {
            let reason: String
            if case .failure(let failure) = outcome { reason = failure.reason } else { reason = "no answer within \(Units.span(seconds: options.timeout))." }
            Output.error("blectl: cannot reach the MQTT broker at \(url): \(reason)")
            Output.error("hint: is the broker running, and is --broker right?")
            throw ExitCode(ExitStatus.unavailable.rawValue)
        }
    }

    /// Subscribes to `filters` and returns once the broker has delivered what it retains for
    /// them: it sends retained messages in the order of the subscriptions, so they are all
    /// in when the broker's own retained `$SYS/broker/version` (subscribed last) arrives.
    private func subscribeAndSync(_ filters: [String]) async throws {
        do {
            for filter in filters { try await client.subscribe(filter) }
            try await client.subscribe("$SYS/broker/version")
        } catch {
            Output.error("blectl: the MQTT broker at \(url) refused a subscription: \(error)")
            throw ExitCode(ExitStatus.failed.rawValue)
        }
        // A broker without $SYS (or one that hides it) gets a short grace instead.
        let synced = await wait(until: .now + .seconds(2)) {
            collected.inbox.withLock { $0.contains { $0.topic == "$SYS/broker/version" } }
        }
        _ = synced
    }

    /// The gateways and boards the broker holds.
    func snapshot() async throws -> Snapshot {
        try await subscribeAndSync([topics.prefix + "/+/status", topics.prefix + "/+/+/state"])
        return Self.snapshot(of: collected.inbox.withLock { $0 }, topics: topics)
    }

    static func snapshot(of messages: [MQTTMessage], topics: FleetTopics) -> Snapshot {
        var snapshot = Snapshot()
        var latest: [String: MQTTMessage] = [:]
        for message in messages { latest[message.topic] = message }
        for message in latest.values.sorted(by: { $0.topic < $1.topic }) where message.topic.hasPrefix(topics.prefix + "/") {
            let levels = message.topic.dropFirst(topics.prefix.count + 1).split(separator: "/").map(String.init)
            if levels.count == 2, levels[1] == "status" {
                snapshot.gateways[levels[0]] = message.text == "online"
            } else if levels.count == 3, levels[2] == "state", !message.payload.isEmpty,
                let board = try? JSONCodec.decode(BoardInfo.self, from: message.payload)
            {
                snapshot.boards.append((levels[0], board))
            }
        }
        return snapshot
    }

    /// Sends a fleet-wide LED command to every gateway and collects their answers until every
    /// gateway that is online has answered or the deadline passes.
    func setLEDs(on: Bool, timeoutMs: Int?) async throws -> (
        results: [(gateway: String, result: FleetResult<Done>)], silent: [String]
    ) {
        let request = "blectl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try await subscribeAndSync([topics.prefix + "/+/status", topics.result("+", request)])
        let online = Self.snapshot(of: collected.inbox.withLock { $0 }, topics: topics).gateways.filter(\.value).keys.sorted()
        guard !online.isEmpty else {
            Output.error("blectl: no gateway is online on the MQTT broker at \(url) (none publishes \(topics.prefix)/<gateway>/status online).")
            throw ExitCode(ExitStatus.failed.rawValue)
        }
        let payload = try JSONCodec.encode(FleetLEDCommand(on: on, request: request, timeoutMs: timeoutMs))
        do {
            try client.publish(topic: topics.allLEDSet(), payload: Array(payload))
        } catch {
            Output.error("blectl: could not send the command to the MQTT broker at \(url): \(error)")
            throw ExitCode(ExitStatus.unavailable.rawValue)
        }
        func answers() -> [String: FleetResult<Done>] {
            var found: [String: FleetResult<Done>] = [:]
            for message in collected.inbox.withLock({ $0 }) {
                let levels = message.topic.split(separator: "/").map(String.init)
                guard message.topic.hasSuffix("/result/\(request)"), levels.count >= 3,
                    let result = try? JSONCodec.decode(FleetResult<Done>.self, from: message.payload)
                else { continue }
                found[levels[levels.count - 3]] = result
            }
            return found
        }
        // Each board's deadline, and a little for the gateways to answer.
        let boardDeadline = Double(timeoutMs ?? 5000) / 1000
        let until = ContinuousClock.now + .milliseconds(Int64(min(options.timeout, boardDeadline + 3) * 1000))
        _ = await wait(until: until) { Set(answers().keys).isSuperset(of: online) }
        let found = answers()
        return (found.keys.sorted().map { ($0, found[$0]!) }, online.filter { found[$0] == nil })
    }
}
