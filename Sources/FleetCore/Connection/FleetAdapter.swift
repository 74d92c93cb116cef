import BlueZ
import Logging
import Synchronization

/// One adapter the fleet connects through: its own connect queue (one connect at a time
/// per controller), its own discovery session, its ledger of connection slots
/// (``AdapterLedger``: the one count of them), and the recent connect failures placement
/// weighs. Connects on different adapters run in parallel.
final class FleetAdapter: Sendable {
    let path: AdapterPath
    /// Its interface name (`hci0`), as the journal and the status say it.
    var name: String { path.name }
    let scheduler = ConnectScheduler(limit: 1)
    let discovery: DiscoveryGovernor
    /// The radio's time (the client's).
    let clock: any RadioClock
    private struct State {
        var adapter: BlueZAdapter
        /// When boards failed to connect through this adapter, per board.
        var failures: [BoardAddress: [ContinuousClock.Instant]] = [:]
        /// Its connection slots: links, connects placed and given a slot, slots lent to
        /// clients, the fleet's reserve.
        var ledger: AdapterLedger
        /// When the fleet started using the adapter, or it was last powered on.
        var since: ContinuousClock.Instant
        /// How long a rotation's connect holds the connect permit here (a slot freed, the next
        /// board connected until its link is up), averaged over the recent ones.
        var rotation: Duration = FleetAdapter.assumedRotation
        /// How long from one link coming up to the next while boards are queued here (every
        /// rotation's work included), averaged; nil until measured.
        var cycle: Duration?
        /// How long a link takes from up to resolved here, averaged.
        var resolve: Duration = FleetAdapter.assumedResolve
        /// When the last link came up with more boards queued behind it.
        var lastLinkUpWithQueue: ContinuousClock.Instant?
        /// BlueZ no longer shows the adapter (``retire()``).
        var retired = false
    }
    private let state: Mutex<State>

    /// Failures older than this no longer count against the adapter.
    static let failureMemory: Duration = .seconds(60)

    /// Whether its controller works; what it sees goes to `report` when the fleet must act.
    let health: AdapterHealthMonitor

    /// `limit`: most links at once (`connection-limit`, or its override); `reserve`: of those,
    /// the slots never lent to clients (`reserved-fleet-slots`).
    init(
        adapter: BlueZAdapter, limit: Int, reserve: Int, client: BlueZClient, filter: DiscoveryFilter, logger: Logger,
        report: @escaping @Sendable (AdapterPath, AdapterHealth.Action) -> Void
    ) {
        self.path = adapter.path
        self.clock = client.clock
        let health = AdapterHealthMonitor(path: adapter.path, clock: client.clock, report: report)
        self.health = health
        self.discovery = DiscoveryGovernor(client: client, filter: filter, logger: logger, health: health)
        self.state = Mutex(State(adapter: adapter, ledger: AdapterLedger(limit: limit, reserve: reserve), since: client.clock.now))
    }

    var adapter: BlueZAdapter { state.withLock { $0.adapter } }

    /// Most links at once on this adapter.
    var limit: Int { state.withLock { $0.ledger.limit } }

    /// Its connection slots as they stand now.
    var ledger: AdapterLedger { state.withLock { $0.ledger } }

    /// Tells the ledger something and reads its answer, in one step.
    @discardableResult
    func withLedger<T>(_ body: (inout AdapterLedger) -> T) -> T {
        state.withLock { body(&$0.ledger) }
    }

    /// BlueZ no longer shows the adapter (unplugged, or bluetoothd gone): the connects still
    /// queued here end without a slot or a `Connect`, and count against nobody. An adapter
    /// shown again at the same path is a new one, with a queue and slots of its own: a
    /// connect queued on this one must not take a slot there uncounted (the simulation found
    /// that: seed 939, two connects on one adapter past its limit, and their failures taken
    /// for the new adapter's, which was reset as stuck).
    func retire() {
        state.withLock { $0.retired = true }
    }

    /// Whether BlueZ no longer shows the adapter.
    var isRetired: Bool { state.withLock { $0.retired } }

    /// Adapters report a board one after another; one that started scanning only lately
    /// may still be about to. Placement waits for those (briefly) before it settles.
    static let freshness: Duration = .seconds(5)

    /// Whether the adapter started (was added or powered on) within ``freshness``.
    var isFresh: Bool { state.withLock { clock.since($0.since) < Self.freshness } }

    /// A rotation's duration before any was measured: what `Device1.Disconnect` takes
    /// (bluetoothd's 2 s timer) plus a connect; releases through the kernel take far less,
    /// and the first measured rotation replaces the guess.
    static let assumedRotation: Duration = .milliseconds(2500)

    /// A link's services resolved, before any was measured.
    static let assumedResolve: Duration = .milliseconds(500)
    /// What a call's work on a link and its release take, beside its connect and resolve.
    static let workOnALink: Duration = .milliseconds(250)

    /// How long one rotation takes here: at least a rotation's connect (one at a time per
    /// adapter), and at least a board's whole turn in a slot (connect, resolve, the work,
    /// the release) shared by the adapter's slots; the back-to-back rotations measured, when
    /// there were some lately.
    var rotationTime: Duration {
        state.withLock { state in
            let turn = (state.rotation + state.resolve + Self.workOnALink) / state.ledger.limit
            return max(state.rotation, turn, state.cycle ?? .zero)
        }
    }

    /// A connect here got its link after holding the connect permit for `held`
    /// (`rotation`: it had to free a slot first: the release, the connect, until the link
    /// was up). When the link before it came up moments ago with boards queued behind it,
    /// the time since then is one rotation as the queue sees it (with few slots, the work on
    /// each link and its release come before the next connect, which the permit alone does
    /// not see).
    func recordLinkUp(held: Duration, rotation: Bool) {
        let now = clock.now
        state.withLock { state in
            if rotation {
                state.rotation = state.rotation == Self.assumedRotation ? held : (state.rotation * 3 + held) / 4
            }
            if let last = state.lastLinkUpWithQueue, last.duration(to: now) < Self.rotationBurstGap {
                let gap = last.duration(to: now)
                state.cycle = state.cycle.map { ($0 * 3 + gap) / 4 } ?? gap
            }
            state.lastLinkUpWithQueue = state.ledger.queued.isEmpty ? nil : now
        }
    }

    /// A link here went from up to resolved in `duration`.
    func recordResolve(_ duration: Duration) {
        state.withLock { state in
            state.resolve = state.resolve == Self.assumedResolve ? duration : (state.resolve * 3 + duration) / 4
        }
    }

    /// Rotations further apart than this are not back to back: the gap says nothing of one.
    static let rotationBurstGap: Duration = .seconds(10)

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

    /// Where `board` stands in this adapter's queue, if it is in it.
    func place(of board: BoardAddress) -> SlotQueuePlace? {
        let place = ledger.place(of: board)
        guard place.inQueue else { return nil }
        return place.ahead.map { .queued(adapter: path, ahead: $0) } ?? .connecting(adapter: path)
    }

    /// Placement chose this adapter for `board`'s connect; ``unclaim(_:)`` when it is done.
    func claim(_ board: BoardAddress) { withLedger { $0.claim(board) } }

    /// `board`'s connect is done (or gave up): it leaves the queue, and the slot it was
    /// given counts as BlueZ shows its link from now on.
    func unclaim(_ board: BoardAddress) { withLedger { $0.unclaim(board) } }

    /// `board` got a slot here and connects: it holds the slot before BlueZ shows its link,
    /// until ``unclaim(_:)``.
    func linking(_ board: BoardAddress) { withLedger { $0.linking(board) } }

    /// BlueZ shows these links through the adapter now (read from its objects in `tree`).
    func linksShown(in tree: BlueZObjectTree) {
        let shown = tree.linkedAddresses(onAdapter: path).compactMap { BoardAddress($0) }
        withLedger { $0.linksShown(shown) }
    }
}
