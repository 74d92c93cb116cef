package import BlueZ
public import Logging
public import ServiceLifecycle

/// The fleet: every known board (one ``Board`` actor each), the adapters they connect
/// through, and the operations that run on many boards at once.
///
/// ``runMirror()`` keeps it in step with BlueZ until cancelled: it runs the BlueZ mirror,
/// adopts boards that advertise the LED service, keeps discovery on while an adapter is
/// powered, and feeds every board the changes of its devices, of the adapters and of BlueZ
/// itself. Its ``services`` do the rest, each one job (adapter recovery, the temperature
/// sampler, slot release, sightings); ``run()`` runs both.
public actor Fleet {
    public nonisolated let events: EventBroadcaster<FleetEvent>
    public nonisolated let configuration: FleetConfiguration
    /// The adapters to connect through.
    public nonisolated let adapterSelection: AdapterSelection
    package nonisolated let client: BlueZClient
    let registry: Registry
    let logger: Logger
    nonisolated let context: FleetContext

    /// The boards (the context owns them; the fleet alone adds and removes them).
    var boards: [BoardAddress: Board] {
        get { context.boards }
        set {
            context.boards = newValue
            refreshPathIndex()
        }
    }
    var devicePaths: [String: BoardAddress] = [:] {
        didSet { refreshPathIndex() }
    }
    /// Boards being adopted (the fleet waits on the registry meanwhile), and whether their
    /// device changed meanwhile: such a change starts no second adoption; the adoption
    /// reads the device again instead of giving the board what it saw before the wait.
    var adopting: [BoardAddress: Bool] = [:]
    /// `devicePaths` to the boards' live state, for advertisements recorded on the mirror.
    nonisolated let pathIndex = DevicePathIndex()
    /// The adapters in use (shown by BlueZ and named by the selection), by object path
    /// (the context owns them; the fleet alone adds and removes them).
    var adapters: [String: FleetAdapter] {
        get { context.adapters }
        set { context.adapters = newValue }
    }
    var anyAdapterPowered: Bool { adapters.values.contains { $0.adapter.powered } }
    var bluezAvailable = false {
        didSet { tally.bluezChanged(available: bluezAvailable) }
    }
    /// Counts and adapter state for `status`, readable without awaiting this actor or any board.
    nonisolated let tally: FleetTally
    /// Whether BlueZ is loaded and the boards are in step with it.
    var synchronised = false
    var loadWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    var nextLoadWaiter: UInt64 = 0
    /// When each board was last noted as seen in the registry (advertisements come often).
    nonisolated let sightings: Sightings
    /// The settings that can change while running (`reconfigure`).
    public private(set) var tunables: Tunables
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
        self.tunables = Tunables(
            defaultCommandTimeout: configuration.defaultCommandTimeout,
            temperatureMaxAge: configuration.temperatureMaxAge, adoption: configuration.adoption,
            profiles: configuration.profiles)
        let events = EventBroadcaster<FleetEvent>(defaultBufferSize: configuration.eventBufferSize)
        self.events = events
        let tally = FleetTally(adapterSelection: adapters.description)
        self.tally = tally
        self.context = FleetContext(
            client: client, configuration: configuration, adapterSelection: adapters, events: events, tally: tally,
            leases: DeviceLeases(), logger: logger, randomness: randomness)
        self.devices = DeviceProxy(context: context)
        self.sightings = Sightings(registry: registry, clock: client.clock, logger: logger)
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
    public func runMirror() async throws {
        // Only what the fleet acts on: characteristic values (the steady notification
        // traffic) go straight to their boards and never wake this loop, and neither do the
        // advertisements of boards that do not wait for one (recorded on the mirror).
        let (mirrorEvents, forward) = AsyncStream.makeStream(of: BlueZMirrorEvent.self)
        let pathIndex = self.pathIndex
        let observation = await client.mirror.observe(interfaces: [BlueZInterfaces.adapter, BlueZInterfaces.device]) {
            event in
            if let advertisement = event.advertisement, let live = pathIndex.live(at: advertisement.path),
                live.advertised(
                    rssi: advertisement.rssi.map(Int.init), adapter: BlueZObjectTree.parent(of: advertisement.path))
            {
                return
            }
            forward.yield(event)
        }
        defer { observation.cancel() }
        for record in await registry.boards where boards[record.address] == nil {
            boards[record.address] = Board(record: record, devices: [], adapterPowered: false, context: context)
        }
        logger.info(
            "fleet starting", metadata: ["fleet.known": "\(boards.count)", "ble.adapters": "\(adapterSelection)"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            let client = self.client
            group.addTask { try await client.run() }
            for await event in mirrorEvents {
                await handle(event)
            }
            try await group.next()
        }
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
        if synchronised { return true }
        nextLoadWaiter &+= 1
        let id = nextLoadWaiter
        let timer = Task { [weak self, clock = client.clock] in
            guard (try? await clock.sleep(for: timeout)) != nil else { return }
            await self?.resumeLoadWaiter(id, loaded: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            loadWaiters[id] = continuation
        }
    }

    private func resumeLoadWaiter(_ id: UInt64, loaded: Bool) {
        loadWaiters.removeValue(forKey: id)?.resume(returning: loaded)
    }

    /// The fleet has synchronised with a freshly loaded BlueZ: wake `waitUntilLoaded`.
    func noteSynchronised(_ value: Bool) {
        synchronised = value
        guard value else { return }
        let waiters = loadWaiters
        loadWaiters = [:]
        for waiter in waiters.values { waiter.resume(returning: true) }
    }

    /// Applies new tunables (e.g. after SIGHUP).
    public func reconfigure(_ tunables: Tunables) {
        if tunables.profiles != self.tunables.profiles {
            context.setProfiles(tunables.profiles)
            for board in boards.values { Task { await board.profilesChanged() } }
            let before = Set(self.tunables.profiles.advertisedServices)
            if Set(tunables.profiles.advertisedServices) != before {
                logger.warning("discovery looks for the advertised services of new profiles after a restart")
            }
        }
        self.tunables = tunables
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
    public nonisolated var status: FleetStatus { tally.status }

    /// Returns once the fleet actor has run this call: a liveness check (e.g. for the watchdog).
    public func ping() {}

    private func refreshPathIndex() {
        pathIndex.replace(with: devicePaths.compactMapValues { boards[$0]?.live })
    }

    func noteAdapterState() {
        context.noteAdapterState()
    }
}
