import BlueZ
import Logging
import Synchronization

/// What every board actor shares: the BlueZ client, the configuration, the event stream,
/// the counts, and the way back to the fleet for what needs all boards and adapters at once
/// (which adapter to connect through, whether a slot is free there).
final class FleetContext: Sendable {
    let client: BlueZClient
    let configuration: FleetConfiguration
    let events: EventBroadcaster<FleetEvent>
    let tally: FleetTally
    let logger: Logger
    /// Each board's source of randomness (its reconnect jitter): the system's in the daemon,
    /// a seeded one in a simulation.
    let randomness: @Sendable (BoardAddress) -> any RandomNumberGenerator & Sendable
    /// The connection slots changed: a board's link became free to take (its work done), a
    /// link came up or went down, a board was queued for a slot. A connect that found every
    /// link busy looks again, and so does the release of idle links ahead of queued connects.
    let slotsChanged = ChangeSignal()
    private let fleet: WeakFleetReference
    private let catalog: Mutex<ProfileCatalog>
    /// The kinds of board known now (SIGHUP may change them).
    var profiles: ProfileCatalog { catalog.withLock { $0 } }

    init(
        client: BlueZClient, configuration: FleetConfiguration, events: EventBroadcaster<FleetEvent>,
        tally: FleetTally, logger: Logger, fleet: WeakFleetReference,
        randomness: @escaping @Sendable (BoardAddress) -> any RandomNumberGenerator & Sendable
    ) {
        self.randomness = randomness
        self.client = client
        self.configuration = configuration
        self.events = events
        self.tally = tally
        self.logger = logger
        self.fleet = fleet
        self.catalog = Mutex(configuration.profiles)
    }

    func setProfiles(_ profiles: ProfileCatalog) {
        catalog.withLock { $0 = profiles }
    }

    /// The adapter `board` should connect through now (``Placement``), claimed; nil when
    /// no usable adapter hears the board.
    func placement(for board: BoardAddress, link: String?, rssi: [String: Int]) async -> PlacementChoice? {
        await fleet.fleet?.placement(for: board, link: link, rssi: rssi)
    }

    /// Restarts discovery on these adapters (those not connecting), so they report the
    /// boards in range at once.
    func kickDiscovery(on adapters: [String]) async {
        await fleet.fleet?.kickDiscovery(on: adapters)
    }

    /// Returns once BlueZ shows `board` on one (`all`: every one) of `adapters` (paths), or
    /// after `limit`.
    func waitUntilHeard(_ board: BoardAddress, on adapters: [String], all: Bool, within limit: Duration) async {
        let paths = adapters.map { "\($0)/dev_\(board.rawValue.replacingOccurrences(of: ":", with: "_"))" }
        _ = try? await client.mirror.wait(timeout: limit, description: "\(board) heard by other adapters") { snapshot in
            let heard = paths.filter { snapshot.tree.device(at: $0) != nil }.count
            return (all ? heard == paths.count : heard > 0) ? .done(()) : .pending
        }
    }

    /// A connect or release of `board`'s link through the adapter at `path` got no answer:
    /// its controller is asked.
    func gotNoAnswer(to what: Fleet.Unanswered, for board: BoardAddress, onAdapter path: String) async {
        await fleet.fleet?.gotNoAnswer(to: what, for: board, onAdapter: path)
    }

    /// A connect through `adapter` failed (its controller's health weighs it).
    func connectFailed(_ board: BoardAddress, on adapter: FleetAdapter) async {
        await fleet.fleet?.connectFailed(board, on: adapter)
    }

    /// Called with `adapter`'s connect permit held: may `board` take a link there? For a
    /// command (`command`), the least recently used idle board on that adapter is evicted
    /// when every slot is taken.
    func reserveSlot(for board: BoardAddress, on adapter: FleetAdapter, command: Bool) async -> Bool {
        await fleet.fleet?.reserveSlot(for: board, on: adapter, command: command) ?? false
    }
}

/// Where a board connects: the adapter (claimed for it), its device there, and whether the
/// adapter is full (a slot must be freed first).
struct PlacementChoice: Sendable {
    let adapter: FleetAdapter
    let device: BlueZDevice
    let full: Bool
    /// Adapters with room that have not reported the board (yet).
    let roomWhereUnheard: [String]
    /// Those of them lately started (or powered on): they may not have heard anything yet.
    let freshRoomWhereUnheard: [String]
    /// The adapters that had reported the board, every one considered.
    let heard: Set<String>
}
