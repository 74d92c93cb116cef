package import BlueZ
public import Logging
public import ServiceLifecycle

/// The fleet: every known board (one ``Board`` actor each), the adapters they connect
/// through, and the operations that run on many boards at once.
///
/// ``run()`` keeps it in step with BlueZ until cancelled (``FleetMirror``: adapters,
/// adoption, every board told of its devices' changes) and runs its ``services``, each one
/// job (adapter recovery, the temperature sampler, slot release, sightings). Clients' links
/// to any device are its ``devices``.
public actor Fleet {
    public nonisolated let events: EventBroadcaster<FleetEvent>
    public nonisolated let configuration: FleetConfiguration
    /// The adapters to connect through.
    public nonisolated let adapterSelection: AdapterSelection
    package nonisolated let client: BlueZClient
    let registry: Registry
    let logger: Logger
    nonisolated let context: FleetContext

    /// The boards (the context keeps them; the mirror adds them).
    var boards: [BoardAddress: Board] { context.boards }
    /// The adapters in use (shown by BlueZ and named by the selection), by object path.
    var adapters: [AdapterPath: FleetAdapter] { context.adapters }
    /// Counts and adapter state for `status`, readable without awaiting this actor or any board.
    nonisolated let tally: FleetTally
    /// Keeps the boards and adapters in step with BlueZ.
    nonisolated let mirror: FleetMirror
    /// When each board was last noted as seen in the registry (advertisements come often).
    nonisolated let sightings: Sightings
    /// The settings that can change while running (`reconfigure`).
    public nonisolated var tunables: Tunables { context.tunables }
    /// Any device, for clients (`device.*`): leases on links through the fleet's adapters.
    public nonisolated let devices: DeviceProxy

    /// Where BlueZ is: the system bus, or a D-Bus address.
    public enum Bus: Sendable, Hashable {
        case system
        case address(String)
    }

    /// Where the kernel's Bluetooth management interface behind BlueZ is, through which the
    /// fleet releases links at once (without it, each release waits bluetoothd's 2 s).
    public enum Management: Sendable, Hashable {
        /// None: links are released through BlueZ's `Device1.Disconnect`.
        case none
        /// This machine's kernel (needs `CAP_NET_ADMIN`; falls back to BlueZ without it).
        case kernel
        /// A relay of a kernel elsewhere, on a Unix socket (a testbed's VM).
        case relay(path: String)
    }

    /// Connects to BlueZ on `bus` for a fleet that owns `adapters`. `run()` then keeps it in
    /// step with BlueZ; ``close()`` ends the connection.
    public static func connect(
        bus: Bus, management: Management = .none, adapters: AdapterSelection, configuration: FleetConfiguration,
        registry: Registry, logger: Logger
    ) async throws(FleetError) -> Fleet {
        let address: String? =
            switch bus {
            case .system: nil
            case .address(let address): address
            }
        let interface: ManagementInterface? =
            switch management {
            case .none: nil
            case .kernel: ManagementInterface(.kernel)
            case .relay(let path): ManagementInterface(.relay(path: path))
            }
        do {
            let client = try await BlueZClient.connect(busAddress: address, management: interface, logger: logger)
            return Fleet(
                client: client, adapters: adapters, configuration: configuration, registry: registry, logger: logger)
        } catch {
            throw FleetError(.bluezUnavailable, "\(error)")
        }
    }

    /// Closes the connection to BlueZ.
    public nonisolated func close() {
        client.close()
    }

    /// A fleet on a client of its own: a ``BlueZClient`` on a simulated radio (its bus and
    /// its clock); ``connect(bus:management:adapters:configuration:registry:logger:)`` makes
    /// the daemon's. For this package's simulation only: BlueZ stays out of FleetCore's public API.
    package init(
        client: BlueZClient, adapters: AdapterSelection, configuration: FleetConfiguration, registry: Registry,
        logger: Logger,
        randomness: @escaping @Sendable (BoardAddress) -> any RandomNumberGenerator & Sendable = { _ in
            SystemRandomNumberGenerator()
        }
    ) {
        self.client = client
        self.adapterSelection = adapters
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        let events = EventBroadcaster<FleetEvent>(defaultBufferSize: configuration.eventBufferSize)
        self.events = events
        let tally = FleetTally(adapterSelection: adapters.description)
        self.tally = tally
        self.context = FleetContext(
            client: client, configuration: configuration, adapterSelection: adapters, events: events, tally: tally,
            leases: DeviceLeases(), logger: logger, randomness: randomness)
        self.devices = DeviceProxy(context: context)
        let sightings = Sightings(registry: registry, clock: client.clock, logger: logger)
        self.sightings = sightings
        self.mirror = FleetMirror(context: context, registry: registry, sightings: sightings, logger: logger)
    }

    // Boards hold the context, which holds them: they go with the fleet.
    deinit { context.clear() }

    /// The fleet's services, each with one job, to run beside ``runMirror()`` (in the
    /// daemon's service group, after the fleet's own service: they stop first).
    public nonisolated var services: [any Service] {
        [
            AdapterRecovery(context: context), SlotReleaser(context: context), TemperatureSampler(context: context),
            SightingsRecorder(context: context, sightings: sightings),
        ]
    }

    /// Keeps the fleet in step with BlueZ and runs its ``services``, until cancelled.
    /// Throws when the bus is lost.
    public func run() async throws {
        let services = self.services
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in services { group.addTask { try await service.run() } }
            group.addTask { try await self.runMirror() }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Keeps the fleet in step with BlueZ until cancelled (its ``services`` run beside it).
    /// Throws when the bus is lost.
    public nonisolated func runMirror() async throws {
        try await mirror.run()
    }

    /// Settings that apply to the next command or advertisement without a restart.
    public struct Tunables: Sendable, Hashable {
        public var defaultCommandTimeout: Duration
        public var temperatureMaxAge: Duration
        public var adoption: AdoptionPolicy
        /// The kinds of board (a board takes its new profile at its next connect).
        public var profiles: ProfileCatalog

        public init(
            defaultCommandTimeout: Duration, temperatureMaxAge: Duration, adoption: AdoptionPolicy,
            profiles: ProfileCatalog = .builtIn
        ) {
            self.defaultCommandTimeout = defaultCommandTimeout
            self.temperatureMaxAge = temperatureMaxAge
            self.adoption = adoption
            self.profiles = profiles
        }
    }

    /// Waits until BlueZ's objects are loaded and the fleet is in step with them (so a call
    /// made now sees BlueZ); false if that did not happen within `timeout`.
    public func waitUntilLoaded(timeout: Duration) async -> Bool {
        await mirror.waitUntilLoaded(timeout: timeout)
    }

    /// Applies new tunables (e.g. after SIGHUP).
    public func reconfigure(_ tunables: Tunables) {
        let before = context.tunables.profiles
        context.setTunables(tunables)
        guard tunables.profiles != before else { return }
        for board in boards.values { Task { await board.profilesChanged() } }
        if Set(tunables.profiles.advertisedServices) != Set(before.advertisedServices) {
            logger.warning("discovery looks for the advertised services of new profiles after a restart")
        }
    }

    /// Disconnects every board (bounded) and saves the registry: the clean end of a run.
    /// Call while `run()` is still running, so disconnects are observed.
    public func shutdown(timeout: Duration = .seconds(5)) async {
        let boards = Array(self.boards.values)
        await withTaskGroup(of: Void.self) { group in
            for board in boards {
                group.addTask { await board.disconnect(timeout: timeout) }
            }
        }
        await flush()
        logger.info("fleet stopped; boards disconnected", metadata: ["fleet.known": "\(boards.count)"])
    }

    /// Saves what the registry has not saved yet (call at shutdown).
    public func flush() async {
        do {
            try await registry.flush()
        } catch {
            logger.error("could not save the board registry: \(error)")
        }
    }

    /// The fleet's state now, read without waiting for this actor or any board.
    public nonisolated var status: FleetStatus { tally.status(adapters: context.adapterEntries) }

    /// Returns once the fleet actor has run this call: a liveness check (e.g. for the watchdog).
    public func ping() {}
}
