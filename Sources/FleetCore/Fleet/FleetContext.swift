import BlueZ
import Logging
import Synchronization

/// What the fleet's parts share, each fact once: the boards (one ``Board`` actor each) and
/// the adapters they connect through (one ``FleetAdapter`` each), the BlueZ client, the
/// configuration and the settings that change while running, the event stream, the counts.
/// ``FleetMirror`` adds and removes boards and adapters (it alone writes them); the fleet,
/// boards, adapters and the fleet's services read them here directly, without a way back
/// through the fleet.
final class FleetContext: Sendable {
    let client: BlueZClient
    let configuration: FleetConfiguration
    /// The adapters to connect through.
    let adapterSelection: AdapterSelection
    let events: EventBroadcaster<FleetEvent>
    let tally: FleetTally
    let logger: Logger
    /// The links held for clients (`device.connect`), by device: never given away to rotate.
    let leases: DeviceLeases
    /// Each board's source of randomness (its reconnect jitter): the system's in the daemon,
    /// a seeded one in a simulation.
    let randomness: @Sendable (BoardAddress) -> any RandomNumberGenerator & Sendable
    /// The connection slots changed: a board's link became free to take (its work done), a
    /// link came up or went down, a board was queued for a slot. A connect that found every
    /// link busy looks again, and so does the release of idle links ahead of queued connects.
    let slotsChanged = ChangeSignal()
    /// What the adapters' health asks the fleet to do (``AdapterHealthMonitor``), by adapter
    /// path: ``AdapterRecovery`` carries it out.
    let healthReports = AsyncStream.makeStream(of: (AdapterPath, AdapterHealth.Action).self)

    private struct Roster {
        var boards: [BoardAddress: Board] = [:]
        var adapters: [AdapterPath: FleetAdapter] = [:]
        /// The settings that can change while running (SIGHUP), the kinds of board among them.
        var tunables: Fleet.Tunables
        /// Clients that want every device reported (an advertisement watch, a connect to a
        /// device not heard yet): while any does, discovery runs without the profiles' filter.
        var discoveryWideners = 0
    }
    private let roster: Mutex<Roster>
    /// Fan-out calls running now; the temperature sampler waits while any does.
    private let calls = Atomic<Int>(0)
    /// Held from reading the adapters' claims to taking one: placements that run at the same
    /// moment see each other's.
    let placementLock = Mutex(())

    init(
        client: BlueZClient, configuration: FleetConfiguration, adapterSelection: AdapterSelection,
        events: EventBroadcaster<FleetEvent>, tally: FleetTally, leases: DeviceLeases, logger: Logger,
        randomness: @escaping @Sendable (BoardAddress) -> any RandomNumberGenerator & Sendable
    ) {
        self.randomness = randomness
        self.client = client
        self.configuration = configuration
        self.adapterSelection = adapterSelection
        self.events = events
        self.tally = tally
        self.leases = leases
        self.logger = logger
        self.roster = Mutex(Roster(tunables: Fleet.Tunables(
            defaultCommandTimeout: configuration.defaultCommandTimeout,
            temperatureMaxAge: configuration.temperatureMaxAge, adoption: configuration.adoption,
            profiles: configuration.profiles)))
    }

    /// Every known board, by address.
    var boards: [BoardAddress: Board] {
        get { roster.withLock { $0.boards } }
        set { roster.withLock { $0.boards = newValue } }
    }

    /// The adapters in use (shown by BlueZ and named by the selection), by object path.
    var adapters: [AdapterPath: FleetAdapter] {
        get { roster.withLock { $0.adapters } }
        set { roster.withLock { $0.adapters = newValue } }
    }

    func board(_ address: BoardAddress) -> Board? { roster.withLock { $0.boards[address] } }

    func adapter(_ path: AdapterPath) -> FleetAdapter? { roster.withLock { $0.adapters[path] } }

    /// Forgets every board and adapter (the fleet is gone): boards hold this context, so
    /// their actors would otherwise outlive the fleet.
    func clear() {
        roster.withLock { $0.boards = [:]; $0.adapters = [:] }
        healthReports.continuation.finish()
    }

    /// The settings that can change while running (``Fleet/reconfigure(_:)``).
    var tunables: Fleet.Tunables { roster.withLock { $0.tunables } }

    func setTunables(_ tunables: Fleet.Tunables) {
        roster.withLock { $0.tunables = tunables }
    }

    /// The kinds of board known now (SIGHUP may change them).
    var profiles: ProfileCatalog { roster.withLock { $0.tunables.profiles } }

    /// The discovery filter the adapters use now: the profiles' advertised services, or
    /// none while a client wants every device reported.
    var discoveryFilter: DiscoveryFilter {
        roster.withLock { roster in
            roster.discoveryWideners > 0
                ? DiscoveryFilter() : DiscoveryFilter(serviceUUIDs: roster.tunables.profiles.advertisedServices.map(\.bluetooth))
        }
    }

    /// One more (`+1`) or one fewer (`-1`) client wants every device reported: whether
    /// discovery is to report every device now, or nil when that did not change.
    func widenDiscovery(_ delta: Int) -> Bool? {
        roster.withLock { roster in
            let wasWide = roster.discoveryWideners > 0
            roster.discoveryWideners = max(0, roster.discoveryWideners + delta)
            let wide = roster.discoveryWideners > 0
            return wide == wasWide ? nil : wide
        }
    }

    /// Whether a fan-out call runs now.
    var callsRunning: Bool { calls.load(ordering: .relaxed) > 0 }

    /// A fan-out call starts (``callEnded()`` when it is done).
    func callStarted() { calls.add(1, ordering: .relaxed) }

    func callEnded() { calls.subtract(1, ordering: .relaxed) }

    /// The adapters as the status shows them, read now: each in use, and each the selection
    /// names that BlueZ does not show.
    var adapterEntries: [FleetTally.AdapterEntry] {
        let adapters = Array(self.adapters.values)
        var entries = adapters.map { fleetAdapter in
            let adapter = fleetAdapter.adapter
            let health = fleetAdapter.health.current
            let ledger = fleetAdapter.ledger
            return FleetTally.AdapterEntry(
                path: adapter.path, name: adapter.name, address: adapter.address, powered: adapter.powered,
                discovering: adapter.discovering, limit: ledger.limit, health: health.condition,
                lastRecovery: health.lastRecovery, held: ledger.held())
        }
        // Named adapters BlueZ does not show are listed too, as missing.
        for name in adapterSelection.missing(among: adapters.map(\.adapter)) {
            entries.append(FleetTally.AdapterEntry(
                path: nil, name: name, address: nil, powered: false, discovering: false,
                limit: configuration.adapterLimits[name] ?? configuration.connectionLimit))
        }
        return entries
    }
}

/// Where a board connects: the adapter (claimed for it), its device there, and whether the
/// adapter is full (a slot must be freed first).
struct PlacementChoice: Sendable {
    let adapter: FleetAdapter
    let device: BlueZDevice
    let full: Bool
    /// Adapters with room that have not reported the board (yet).
    let roomWhereUnheard: [AdapterPath]
    /// Those of them lately started (or powered on): they may not have heard anything yet.
    let freshRoomWhereUnheard: [AdapterPath]
}
