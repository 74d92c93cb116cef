public import Logging
public import ServiceLifecycle
import FleetRPC
import FleetRPCClient
import Foundation
import MQTT
import Synchronization

/// Publishes the fleet to an MQTT broker (`blefleet-mqtt(7)`): the gateway's status, each
/// board's availability, LED, temperature and state, Home Assistant discovery configs; and,
/// with `commands`, carries out LED commands for one board or the whole fleet.
///
/// A client of `blefleetd`'s socket like any other (`blefleet-mqtt`, its own unit and user):
/// the daemon that owns the adapters has no network. The fleet comes from `boards.list` and
/// the event stream; commands go as `led.set`. A daemon that goes away is followed: the
/// gateway says `offline` until it is back, and everything is published again then.
///
/// The broker never slows the fleet: fleet events go into a bounded ``MQTTOutbox`` (one
/// entry per topic, oldest temperature updates dropped first), and the outbox hands at most
/// ``inFlightLimit`` messages at a time to the client. The broker may be down at start; the
/// client reconnects with backoff and everything retained is published again on each
/// connect, and when Home Assistant says it is `online`.
public final class MQTTBridge: Service, Sendable {
    public struct Configuration: Sendable, Hashable {
        /// `mqtt://host[:port]` or `mqtts://host[:port]`.
        public var url: String
        /// This gateway's topic level: unique on the broker.
        public var gateway: String
        public var username: String?
        public var password: String?
        public var caFile: String?
        public var topicPrefix: String
        /// Empty: no Home Assistant discovery.
        public var discoveryPrefix: String
        /// Carry out LED commands from the broker (else publish only).
        public var commands: Bool
        /// Most messages waiting for the broker.
        public var queueLimit: Int
        /// Temperatures are published on change and at least this often.
        public var republishInterval: Duration

        public init(
            url: String, gateway: String, username: String? = nil, password: String? = nil, caFile: String? = nil,
            topicPrefix: String = "blefleet", discoveryPrefix: String = "homeassistant", commands: Bool = false,
            queueLimit: Int = 1000, republishInterval: Duration = .seconds(60)
        ) {
            self.url = url
            self.gateway = gateway
            self.username = username
            self.password = password
            self.caFile = caFile
            self.topicPrefix = topicPrefix
            self.discoveryPrefix = discoveryPrefix
            self.commands = commands
            self.queueLimit = queueLimit
            self.republishInterval = republishInterval
        }
    }

    /// The bridge as `daemon.status` reports it.
    public struct Status: Sendable, Hashable {
        public var broker: String
        public var gateway: String
        public var connected: Bool
        /// Messages waiting for the broker.
        public var queued: Int
        /// Temperature updates dropped because the broker was too slow or away.
        public var dropped: Int
    }

    /// Messages handed to the client and not yet sent, at most.
    static let inFlightLimit = 64
    /// LED commands from the broker carried out at once, at most; more are refused.
    static let concurrentCommands = 16

    let configuration: Configuration
    let client: MQTTClient
    let core: MQTTBridgeCore
    let socketPath: String
    let logger: Logger

    /// Checks the configuration; nothing touches the network or the daemon until ``run()``.
    /// Throws a ``MQTTBridgeError`` naming what is wrong.
    public init(configuration: Configuration, socketPath: String, logger: Logger) throws {
        guard FleetTopics.isValidLevel(configuration.gateway), configuration.gateway != "all" else {
            throw MQTTBridgeError(
                "gateway: \"\(configuration.gateway)\" cannot be a topic level (1–128 bytes, no /, + or #, not \"all\")")
        }
        let url: MQTTURL
        do {
            url = try MQTTURL(configuration.url)
        } catch {
            throw MQTTBridgeError("url: \(error)")
        }
        let topics = FleetTopics(prefix: configuration.topicPrefix)
        var logger = logger
        logger[metadataKey: "mqtt.broker"] = "\(url)"
        do {
            client = try MQTTClient(
                configuration: MQTTClient.Configuration(
                    url: url, clientID: "blefleet-mqtt-\(configuration.gateway)-\(getpid())",
                    username: configuration.username, password: configuration.password, caFile: configuration.caFile,
                    will: .init(topic: topics.status(configuration.gateway), payload: Array("offline".utf8), retain: true)),
                logger: logger)
        } catch {
            throw MQTTBridgeError("\(error)")
        }
        self.configuration = configuration
        self.socketPath = socketPath
        self.logger = logger
        core = MQTTBridgeCore(configuration: configuration, broker: "\(url)", client: client, logger: logger)
    }

    public var status: Status { core.status }

    public func run() async throws {
        try client.start()
        for filter in core.subscriptions {
            try await client.subscribe(filter)
        }
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.followBroker() }
                group.addTask { await self.followDaemon() }
                group.addTask { await self.republishPeriodically() }
                await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            Task { await self.core.goOffline() }
        }
    }

    /// The client's events, until it is shut down.
    private func followBroker() async {
        for await event in client.events {
            await core.handle(event)
        }
    }

    /// The daemon's boards and events, for as long as the bridge runs: connected again with
    /// backoff (a quarter second, doubling to 5 s) whenever the daemon goes away.
    private func followDaemon() async {
        var delay: Duration = .milliseconds(250)
        var away = false
        while !Task.isCancelled {
            do {
                let rpc = try FleetRPCClient(socketPath: socketPath)
                let notifications = rpc.notifications()
                _ = try await rpc.call(
                    FleetMethods.EventsSubscribe.self, EventsSubscribeParams(topics: [.boards, .temperature, .led, .sensor]))
                logger.notice("following blefleetd", metadata: ["socket": "\(socketPath)"])
                away = false
                delay = .milliseconds(250)
                await core.daemonConnected(rpc)
                for try await notification in notifications {
                    if notification.method == EventNotification.method {
                        guard let event = notification.params(as: EventNotification.self) else { continue }
                        await core.handle(event)
                    } else if notification.method == EventNotification.droppedMethod {
                        // Events were lost (the bridge fell behind): publish the fleet afresh.
                        await core.publishEverything()
                    }
                }
                throw FleetRPCClientError.connectionClosed(method: nil)
            } catch {
                if Task.isCancelled { return }
                if !away {
                    logger.warning(
                        "cannot reach blefleetd; the gateway shows offline until it is back",
                        metadata: ["socket": "\(socketPath)", "reason": "\(error)"])
                    away = true
                }
                await core.daemonLost()
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return
            }
            delay = min(delay * 2, .seconds(5))
        }
    }

    private func republishPeriodically() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: configuration.republishInterval)
            } catch {
                return
            }
            await core.republishTemperatures()
        }
    }
}

/// A configuration the bridge cannot work with.
public struct MQTTBridgeError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
