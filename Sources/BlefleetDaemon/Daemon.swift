import FleetCore
import FleetHistory
import FleetRPC
import FleetRPCServer
import JSONRPC
import Foundation
import Synchronization
public import Logging
import ServiceLifecycle
public import Systemd

/// The daemon: owns the adapter through BlueZ, runs the fleet, serves JSON-RPC on the
/// socket, and lives under systemd. Start order (as bluetoothd's own main does): logging,
/// bus, registry, fleet, socket, then services; `READY=1` only once clients can be served;
/// reverse order on SIGTERM.
public struct Daemon: Sendable {
    public static let version = BlefleetVersion.current

    public let configuration: DaemonConfiguration
    /// Reads the configuration again (SIGHUP).
    public let reread: @Sendable () throws -> DaemonConfiguration
    /// The level the loggers follow; SIGHUP sets it from `log-level`. `nil`: not reloadable.
    public let logLevel: LogLevelSetting?
    let logger: Logger

    public init(
        configuration: DaemonConfiguration, logger: Logger, logLevel: LogLevelSetting? = nil,
        reread: @escaping @Sendable () throws -> DaemonConfiguration
    ) {
        self.configuration = configuration
        self.logger = logger
        self.logLevel = logLevel
        self.reread = reread
    }

    /// Runs until SIGTERM/SIGINT (returns) or a fatal error (throws `DaemonExit`).
    public func run() async throws {
        let config = configuration
        let fleetConfiguration: FleetConfiguration
        do {
            fleetConfiguration = try config.fleetConfiguration()
        } catch {
            throw DaemonExit(status: DaemonExit.configuration, "\(error)")
        }

        try Self.makeDirectory(config.stateDirectory, what: "state directory (--state-dir)")
        let registry = Registry(directory: config.stateDirectory, logger: logger)
        let fleet: Fleet
        do {
            fleet = try await Fleet.connect(
                bus: config.bus == "system" ? .system : .address(config.bus),
                management: Self.management(bus: config.bus, environment: ProcessInfo.processInfo.environment),
                adapters: config.adapter,
                configuration: fleetConfiguration, registry: registry, logger: logger)
        } catch {
            let bus = config.bus == "system"
                ? "the system bus (\(ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"))"
                : config.bus
            throw DaemonExit(status: DaemonExit.unavailable, "cannot connect to \(bus): \(error.message). Is dbus running?")
        }
        defer { fleet.close() }

        if let mqtt = config.mqtt {
            // The daemon has no network: the bridge is blefleet-mqtt, a client of the socket.
            logger.notice(
                "the mqtt: section is served by blefleet-mqtt (blefleet-mqtt.service) now, not by blefleetd",
                metadata: ["mqtt.broker": "\(mqtt.url)"])
        }
        var historySettings = config.history
        historySettings.path = (config.stateDirectory as NSString).appendingPathComponent("history.sqlite3")
        let history = HistoryStore(settings: historySettings, logger: logger)
        await history.open()
        let server = try makeServer(fleet: fleet, history: history)
        do {
            try await server.bind()
        } catch {
            throw DaemonExit(status: DaemonExit.cannotCreate, "cannot listen on \(config.socketPath): \(error)")
        }
        let listening: String =
            switch server.configuration.listener {
            case .path(let path): path
            case .fileDescriptor(let fd): "fd \(fd) from systemd"
            }
        logger.info(
            "listening", metadata: ["socket": "\(listening)", "ble.adapter": "\(config.adapter)", "version": "\(Self.version)"])

        let notifier = SystemdNotifier()
        let watchdog: Watchdog?
        do {
            watchdog = try Watchdog.fromEnvironment()
        } catch {
            logger.warning("watchdog disabled: \(error)")
            watchdog = nil
        }
        let services: [any Service] = [
            WatchdogService(watchdog: watchdog, notifier: notifier, logger: logger, isHealthy: {
                // The fleet actor answers: the daemon's core is not wedged.
                await fleet.ping()
                return true
            }),
            FleetService(fleet: fleet),
        ] + fleet.services.map { GracefulCancel($0) } + [
            ServeWhenLoaded(server: server, fleet: fleet, logger: logger),
            ReloadService(
                fleet: fleet, running: config, reread: reread, logLevel: logLevel, notifier: notifier, logger: logger),
            NotifyService(fleet: fleet, notifier: notifier, logger: logger),
            HistoryService(store: history, fleet: fleet, logger: logger),
        ]
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        do {
            try await group.run()
        } catch {
            throw DaemonExit(status: DaemonExit.unavailable, "stopped: \(error)")
        }
        logger.info("stopped")
    }

    private func makeServer(fleet: Fleet, history: HistoryStore) throws -> RPCServer {
        let config = configuration
        let activated = (try? ActivatedSocket.fromEnvironment()) ?? []
        let listener: RPCServerConfiguration.Listener
        if let socket = activated.first {
            logger.info("using the socket passed by systemd", metadata: ["fd": "\(socket.fileDescriptor)"])
            listener = .fileDescriptor(socket.fileDescriptor)
        } else {
            let directory = (config.socketPath as NSString).deletingLastPathComponent
            try Self.makeDirectory(directory, what: "socket directory")
            listener = .path(config.socketPath)
        }
        var dispatcher = JSONRPCDispatcher(
            policy: AccessPolicy(configuration: .init(controlGroup: config.controlGroup, readOnlyGroup: config.readOnlyGroup)),
            logger: logger)
        let subscriptions = EventSubscriptions(events: fleet.events, bufferSize: config.maxQueuedNotifications)
        let clients = ClientCounter()
        FleetMethodBindings.register(
            on: &dispatcher, fleet: fleet, events: subscriptions,
            environment: .init(
                version: Self.version, clientCount: { clients.count },
                history: .init(
                    status: {
                        let reason: String? = if case .off(let reason) = history.state { reason } else { nil }
                        return DaemonStatus.History(
                            enabled: reason == nil, reason: reason, path: history.settings.path, dropped: history.droppedCount)
                    },
                    read: { boards, sensor, since, until, resolution in
                        do {
                            return try await history.read(
                                boards, sensor: sensor, since: since, until: until, resolution: resolution,
                                maxRawPoints: FleetMethods.HistoryRead.maxRawPoints)
                        } catch HistoryError.tooManyRawPoints {
                            throw FleetMethods.HistoryRead.tooManyRawPoints
                        } catch {
                            throw RPCError(.historyUnavailable, "\(error)")
                        }
                    }),
                limits: .init(maxFrameBytes: config.maxFrameBytes, maxCallsPerConnection: config.maxCallsPerClient),
                access: .init(controlGroup: config.controlGroup, readOnlyGroup: config.readOnlyGroup),
                subscriptionsPerConnection: config.subscriptionsPerConnection))
        let server = RPCServer(
            configuration: RPCServerConfiguration(
                // 0660 for the control group; with a read-only group the socket must be
                // reachable by its members too, so it is 0666 and every call is authorized
                // from the caller's credentials alone (strangers get a clear refusal).
                listener: listener, socketMode: config.readOnlyGroup == nil ? 0o660 : 0o666,
                socketGroup: config.controlGroup,
                maxFrameBytes: config.maxFrameBytes, maxCallsInFlightPerConnection: config.maxCallsPerClient,
                maxBatchCalls: config.maxBatchCalls, maxCallsInFlightPerUser: config.maxCallsPerUser,
                maxCallsInFlight: config.maxCallsInFlight, reservedControlCalls: config.reservedControlCalls,
                maxQueuedFramesPerConnection: config.maxQueuedNotifications,
                maxConnectionsPerUser: config.maxConnectionsPerUser, maxConnections: config.maxConnections,
                idleTimeout: config.idleTimeoutSeconds > 0 ? .seconds(config.idleTimeoutSeconds) : nil),
            dispatcher: dispatcher, logger: logger)
        clients.server = server
        return server
    }

    /// Where the kernel's Bluetooth management interface behind BlueZ is: the relay
    /// `BLEFLEET_MGMT_SOCKET` names (a testbed whose bluetoothd runs in a VM); else this
    /// machine's kernel when BlueZ is on this machine's system bus; else none (a private bus
    /// has no kernel of ours behind it).
    static func management(bus: String, environment: [String: String]) -> Fleet.Management {
        if let relay = environment["BLEFLEET_MGMT_SOCKET"], !relay.isEmpty { return .relay(path: relay) }
        let systemBus = environment["DBUS_SYSTEM_BUS_ADDRESS"].map { $0.isEmpty || $0 == "unix:path=/run/dbus/system_bus_socket" } ?? true
        return bus == "system" && systemBus ? .kernel : .none
    }

    static func makeDirectory(_ path: String, what: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw DaemonExit(status: DaemonExit.cannotCreate, "the \(what) \(path) is not a directory")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
        } catch {
            throw DaemonExit(status: DaemonExit.cannotCreate, "cannot create the \(what) \(path): \(error.localizedDescription)")
        }
    }
}

/// A service that runs until cancelled, cancelled at graceful shutdown (the fleet's loops:
/// nothing of theirs needs saving).
struct GracefulCancel: Service {
    let service: any Service

    init(_ service: any Service) {
        self.service = service
    }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await service.run() }
        } catch is CancellationError {
            // Stopped as asked.
        }
    }
}

/// The server's client count for `daemon.status`, set once the server exists.
final class ClientCounter: Sendable {
    private let box = Mutex<RPCServer?>(nil)

    var server: RPCServer? {
        get { box.withLock { $0 } }
        set { box.withLock { $0 = newValue } }
    }

    var count: Int { server?.connectionCount ?? 0 }
}

/// Accepts calls only once the BlueZ objects are loaded (or BlueZ is known to be absent
/// after a grace period): a call that arrives first — e.g. the one that socket-activated the
/// daemon — waits in the listen backlog instead of being told BlueZ is not running.
struct ServeWhenLoaded: Service {
    let server: RPCServer
    let fleet: Fleet
    let logger: Logger
    var grace: Duration = .seconds(5)

    func run() async throws {
        _ = await fleet.waitUntilLoaded(timeout: grace)
        try await server.run()
    }
}
