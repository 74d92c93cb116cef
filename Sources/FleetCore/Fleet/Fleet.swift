import BlueZ
public import Logging
import Synchronization

/// The fleet: every known board (one ``Board`` actor each), the adapter they share, and the
/// operations that run on many boards at once.
///
/// `run()` keeps it in step with BlueZ until cancelled: it runs the BlueZ mirror, adopts
/// boards that advertise the LED service, keeps discovery on while the adapter is powered,
/// and feeds every board the changes of its device, of the adapter and of BlueZ itself.
public actor Fleet {
    public nonisolated let events: EventBroadcaster<FleetEvent>
    public nonisolated let configuration: FleetConfiguration
    /// The adapter to use: interface name (`hci0`) or address.
    public nonisolated let adapterName: String
    let client: BlueZClient
    let registry: Registry
    let logger: Logger
    nonisolated let context: FleetContext

    var boards: [BoardAddress: Board] = [:] {
        didSet { refreshPathIndex() }
    }
    var devicePaths: [String: BoardAddress] = [:] {
        didSet { refreshPathIndex() }
    }
    /// `devicePaths` to the boards' live state, for advertisements recorded on the mirror.
    nonisolated let pathIndex = DevicePathIndex()
    var adapter: BlueZAdapter? {
        didSet { noteAdapterState() }
    }
    var bluezAvailable = false {
        didSet { tally.bluezChanged(available: bluezAvailable) }
    }
    var discovering = false {
        didSet { noteAdapterState() }
    }
    /// Counts and adapter state for `status`, readable without awaiting this actor or any board.
    nonisolated let tally: FleetTally
    /// Whether BlueZ is loaded and the boards are in step with it.
    var synchronised = false
    var loadWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    var nextLoadWaiter: UInt64 = 0
    /// When each board was last noted as seen in the registry (advertisements come often).
    var lastNotedSeen: [BoardAddress: (at: ContinuousClock.Instant, name: String?)] = [:]
    /// The settings that can change while running (`reconfigure`).
    public private(set) var tunables: Tunables

    /// Where BlueZ is: the system bus, or a D-Bus address.
    public enum Bus: Sendable, Hashable {
        case system
        case address(String)
    }

    /// Connects to BlueZ on `bus` for a fleet that owns `adapter` (an interface name or an
    /// address). `run()` then keeps it in step with BlueZ; ``close()`` ends the connection.
    public static func connect(
        bus: Bus, adapter: String, configuration: FleetConfiguration, registry: Registry, logger: Logger
    ) async throws(FleetError) -> Fleet {
        let address: String? =
            switch bus {
            case .system: nil
            case .address(let address): address
            }
        do {
            let client = try await BlueZClient.connect(busAddress: address, logger: logger)
            return Fleet(client: client, adapter: adapter, configuration: configuration, registry: registry, logger: logger)
        } catch {
            throw FleetError(.bluezUnavailable, "\(error)")
        }
    }

    /// Closes the connection to BlueZ.
    public nonisolated func close() {
        client.close()
    }

    init(
        client: BlueZClient, adapter: String, configuration: FleetConfiguration, registry: Registry, logger: Logger
    ) {
        self.client = client
        self.adapterName = adapter
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        self.tunables = Tunables(
            defaultCommandTimeout: configuration.defaultCommandTimeout,
            temperatureMaxAge: configuration.temperatureMaxAge, adoption: configuration.adoption)
        let events = EventBroadcaster<FleetEvent>(defaultBufferSize: configuration.eventBufferSize)
        self.events = events
        let tally = FleetTally(adapterName: adapter)
        self.tally = tally
        // Boards ask the fleet for a connection slot; the fleet owns the boards, so the way
        // back is a weak reference, set once the fleet exists.
        let fleetReference = WeakFleetReference()
        self.context = FleetContext(
            client: client, configuration: configuration, events: events, tally: tally, logger: logger,
            reserveSlot: { address, command in
                await fleetReference.fleet?.reserveSlot(for: address, command: command) ?? false
            })
        fleetReference.fleet = self
    }

    /// Keeps the fleet in step with BlueZ until cancelled. Throws when the bus is lost.
    public func run() async throws {
        // Only what the fleet acts on: characteristic values (the steady notification
        // traffic) go straight to their boards and never wake this loop, and neither do the
        // advertisements of boards that do not wait for one (recorded on the mirror).
        let (mirrorEvents, forward) = AsyncStream.makeStream(of: BlueZMirrorEvent.self)
        let pathIndex = self.pathIndex
        let observation = await client.mirror.observe(interfaces: [BlueZInterfaces.adapter, BlueZInterfaces.device]) {
            event in
            if let advertisement = event.advertisement, let live = pathIndex.live(at: advertisement.path),
                live.advertised(rssi: advertisement.rssi.map(Int.init))
            {
                return
            }
            forward.yield(event)
        }
        defer { observation.cancel() }
        for record in await registry.boards where boards[record.address] == nil {
            boards[record.address] = Board(record: record, device: nil, adapterPowered: false, context: context)
        }
        logger.info("fleet starting", metadata: ["fleet.known": "\(boards.count)", "ble.adapter": "\(adapterName)"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            let client = self.client
            group.addTask { try await client.run() }
            group.addTask { [weak self] in
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(5))
                    await self?.noteSightings()
                    try? await self?.registry.flushIfDue()
                }
            }
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

        public init(defaultCommandTimeout: Duration, temperatureMaxAge: Duration, adoption: AdoptionPolicy) {
            self.defaultCommandTimeout = defaultCommandTimeout
            self.temperatureMaxAge = temperatureMaxAge
            self.adoption = adoption
        }
    }

    /// Waits until BlueZ's objects are loaded and the fleet is in step with them (so a call
    /// made now sees BlueZ); false if that did not happen within `timeout`.
    public func waitUntilLoaded(timeout: Duration) async -> Bool {
        if synchronised { return true }
        nextLoadWaiter &+= 1
        let id = nextLoadWaiter
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
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

    private func noteAdapterState() {
        tally.adapterChanged(
            address: adapter?.address, present: adapter != nil, powered: adapter?.powered ?? false,
            discovering: discovering)
    }

    // MARK: Connection slots

    /// Called by a board holding the adapter's connect permit: may it take a link? Counts the
    /// adapter's connected devices (ours and anyone else's); for a command, evicts the least
    /// recently used idle board when all slots are taken.
    func reserveSlot(for address: BoardAddress, command: Bool) async -> Bool {
        guard let adapter else { return false }
        let connected = await client.mirror.tree.devices(onAdapter: adapter.path).filter(\.hasLink)
        var links: [ConnectionSlots.Link] = []
        for device in connected {
            guard let other = BoardAddress(device.address), other != address else { continue }
            if let board = boards[other] {
                links.append(await board.linkUsage)
            } else {
                // Another client's link: never ours to evict.
                links.append(ConnectionSlots.Link(address: other, lastUsed: .now, isBusy: true))
            }
        }
        switch ConnectionSlots.decide(for: address, links: links, limit: configuration.connectionLimit) {
        case .available:
            return true
        case .evict(let victim):
            guard command, let board = boards[victim] else { return false }
            logger.info(
                "evicting the least recently used idle board to free a connection slot",
                metadata: ["ble.address": "\(address)", "evicted": "\(victim)"])
            await board.disconnect()
            return true
        case .noSlot:
            return false
        }
    }
}

/// A weak reference to the fleet that boards can hold without keeping it alive.
final class WeakFleetReference: Sendable {
    private struct Storage { weak var fleet: Fleet? }
    private let storage = Mutex(Storage())

    var fleet: Fleet? {
        get { storage.withLock { $0.fleet } }
        set { storage.withLock { $0.fleet = newValue } }
    }
}
