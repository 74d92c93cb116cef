import BlueZ
import Logging
import Synchronization

/// One adapter the fleet connects through: its own connect queue (one connect at a time
/// per controller), its own discovery session, its own budget of connection slots, and the
/// recent connect failures placement weighs. Connects on different adapters run in parallel.
final class FleetAdapter: Sendable {
    let path: String
    let name: String
    /// Most links at once on this adapter (`connection-limit`, or its override).
    let limit: Int
    let scheduler = ConnectScheduler(limit: 1)
    let discovery: DiscoveryGovernor
    /// The radio's time (the client's).
    let clock: any RadioClock
    private struct State {
        var adapter: BlueZAdapter
        /// When boards failed to connect through this adapter, per board.
        var failures: [BoardAddress: [ContinuousClock.Instant]] = [:]
        /// Boards whose connect is placed on this adapter and not finished (queued or
        /// running), in the order they were placed: the order of the connect queue.
        var placed: [BoardAddress] = []
        /// Boards given a slot here whose connect has not finished: they hold the slot
        /// before BlueZ shows their link.
        var linking: Set<BoardAddress> = []
        /// When the fleet started using the adapter, or it was last powered on.
        var since: ContinuousClock.Instant
        /// How long one rotation takes here (a slot freed, the next board connected and
        /// resolved), averaged over the recent ones.
        var rotation: Duration = FleetAdapter.assumedRotation
    }
    private let state: Mutex<State>

    /// Failures older than this no longer count against the adapter.
    static let failureMemory: Duration = .seconds(60)

    /// Whether its controller works; what it sees goes to `report` when the fleet must act.
    let health: AdapterHealthMonitor

    init(
        adapter: BlueZAdapter, limit: Int, client: BlueZClient, filter: DiscoveryFilter, logger: Logger,
        report: @escaping @Sendable (String, AdapterHealth.Action) -> Void
    ) {
        self.path = adapter.path
        self.name = adapter.name
        self.limit = max(1, limit)
        self.clock = client.clock
        let health = AdapterHealthMonitor(path: adapter.path, clock: client.clock, report: report)
        self.health = health
        self.discovery = DiscoveryGovernor(client: client, filter: filter, logger: logger, health: health)
        self.state = Mutex(State(adapter: adapter, since: client.clock.now))
    }

    var adapter: BlueZAdapter { state.withLock { $0.adapter } }

    /// Adapters report a board one after another; one that started scanning only lately
    /// may still be about to. Placement waits for those (briefly) before it settles.
    static let freshness: Duration = .seconds(5)

    /// Whether the adapter started (was added or powered on) within ``freshness``.
    var isFresh: Bool { state.withLock { clock.since($0.since) < Self.freshness } }

    /// A rotation's duration before any was measured: what `Device1.Disconnect` takes
    /// (bluetoothd's 2 s timer) plus a connect; releases through the kernel take far less,
    /// and the first measured rotation replaces the guess.
    static let assumedRotation: Duration = .milliseconds(2500)

    /// The average rotation time (``assumedRotation`` until one was measured).
    var rotationTime: Duration { state.withLock { $0.rotation } }

    /// A connect that had to free a slot held the adapter's connect permit for `duration`
    /// (the release of a slot, the connect, until the link was up).
    func recordRotation(_ duration: Duration) {
        state.withLock { state in
            state.rotation = state.rotation == Self.assumedRotation ? duration : (state.rotation * 3 + duration) / 4
        }
    }

    func poweredOn() {
        state.withLock { $0.since = clock.now }
        health.observe { health, now in
            health.restarted(now: now)
            return .none
        }
    }

    func update(_ adapter: BlueZAdapter) {
        state.withLock { $0.adapter = adapter }
    }

    func noteFailure(of board: BoardAddress, now: ContinuousClock.Instant? = nil) {
        let now = now ?? clock.now
        return state.withLock { state in
            state.failures[board, default: []].append(now)
        }
    }

    func recentFailures(of board: BoardAddress, now: ContinuousClock.Instant? = nil) -> Int {
        let now = now ?? clock.now
        return state.withLock { state in
            let recent = (state.failures[board] ?? []).filter { $0.duration(to: now) < Self.failureMemory }
            state.failures[board] = recent.isEmpty ? nil : recent
            return recent.count
        }
    }

    /// Connects placed on this adapter and not finished: counted from the moment placement
    /// chooses it, so that boards placed at the same moment spread over the adapters.
    var connectsInProgress: Int { state.withLock { $0.placed.count } }

    /// The boards whose connect is placed here: each takes a slot once connected.
    var placedBoards: Set<BoardAddress> { state.withLock { Set($0.placed) } }

    /// The boards placed here that are still waiting for a slot (not given one yet), in
    /// queue order.
    var queuedBoards: [BoardAddress] {
        state.withLock { state in state.placed.filter { !state.linking.contains($0) } }
    }

    /// Where `board` stands in this adapter's queue, if it is in it.
    func place(of board: BoardAddress) -> SlotQueuePlace? {
        state.withLock { state in
            guard state.placed.contains(board) else { return nil }
            if state.linking.contains(board) { return .connecting(adapter: name) }
            let ahead = state.placed.prefix { $0 != board }.filter { !state.linking.contains($0) }.count
            return .queued(adapter: name, ahead: ahead)
        }
    }

    /// Placement chose this adapter for `board`'s connect; ``unclaim(_:)`` when it is done.
    func claim(_ board: BoardAddress) {
        state.withLock { state in
            if !state.placed.contains(board) { state.placed.append(board) }
        }
    }

    /// `board`'s connect is done (or gave up): it leaves the queue, and the slot it was
    /// given counts as BlueZ shows its link from now on.
    func unclaim(_ board: BoardAddress) {
        state.withLock { state in
            state.placed.removeAll { $0 == board }
            state.linking.remove(board)
        }
    }

    /// The boards given a slot whose connect is not finished (``linking(_:)``).
    var linkingBoards: Set<BoardAddress> { state.withLock { $0.linking } }

    /// `board` got a slot here and connects: it holds the slot before BlueZ shows its link,
    /// until ``unclaim(_:)``.
    func linking(_ board: BoardAddress) {
        state.withLock { _ = $0.linking.insert(board) }
    }
}
