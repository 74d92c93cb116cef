public import BlueZ
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

    var boards: [BoardAddress: Board] = [:]
    var devicePaths: [String: BoardAddress] = [:]
    var adapter: BlueZAdapter?
    var bluezAvailable = false
    var discovering = false
    /// Last known board counts, kept for `status` without awaiting every board.
    var readyBoards: Set<BoardAddress> = []
    var linkedBoards: Set<BoardAddress> = []
    /// The settings that can change while running (`reconfigure`).
    public private(set) var tunables: Tunables

    public init(
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
        // Boards ask the fleet for a connection slot; the fleet owns the boards, so the way
        // back is a weak reference, set once the fleet exists.
        let fleetReference = WeakFleetReference()
        self.context = FleetContext(
            client: client, configuration: configuration, events: events, logger: logger,
            reserveSlot: { address, command in
                await fleetReference.fleet?.reserveSlot(for: address, command: command) ?? false
            })
        fleetReference.fleet = self
    }

    /// Keeps the fleet in step with BlueZ until cancelled. Throws when the bus is lost.
    public func run() async throws {
        let mirrorEvents = await client.mirror.events()
        let phaseEvents = events.subscribe(bufferSize: 4096)
        for record in await registry.boards where boards[record.address] == nil {
            boards[record.address] = Board(record: record, device: nil, adapterPowered: false, context: context)
        }
        logger.info("fleet starting", metadata: ["fleet.known": "\(boards.count)", "ble.adapter": "\(adapterName)"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            let client = self.client
            group.addTask { try await client.run() }
            group.addTask { [weak self] in
                for await delivery in phaseEvents {
                    guard case .event(.boardPhaseChanged(let address, _, let phase)) = delivery else { continue }
                    await self?.notePhase(address, phase)
                }
            }
            group.addTask { [weak self] in
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(5))
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

    /// Waits until BlueZ's objects are loaded; false if BlueZ did not appear within `timeout`.
    public func waitUntilLoaded(timeout: Duration) async -> Bool {
        (try? await client.mirror.waitUntilLoaded(timeout: timeout)) != nil
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

    public var status: FleetStatus {
        FleetStatus(
            adapterName: adapterName, adapterAddress: adapter?.address, adapterPresent: adapter != nil,
            adapterPowered: adapter?.powered ?? false, bluezAvailable: bluezAvailable, discovering: discovering,
            boardCount: boards.count, readyCount: readyBoards.count, connectedCount: linkedBoards.count)
    }

    private func notePhase(_ address: BoardAddress, _ phase: BoardPhase) {
        let known = boards[address] != nil
        if phase == .ready, known { readyBoards.insert(address) } else { readyBoards.remove(address) }
        if [.resolving, .ready, .disconnecting].contains(phase), known {
            linkedBoards.insert(address)
        } else {
            linkedBoards.remove(address)
        }
    }

    // MARK: Connection slots

    /// Called by a board holding the adapter's connect permit: may it take a link? Counts the
    /// adapter's connected devices (ours and anyone else's); for a command, evicts the least
    /// recently used idle board when all slots are taken.
    func reserveSlot(for address: BoardAddress, command: Bool) async -> Bool {
        guard let adapter else { return false }
        let connected = await client.mirror.tree.devices(onAdapter: adapter.path).filter(\.connected)
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
