import BlueZ

/// One adapter's connection slots, counted in one place: the links BlueZ shows through it
/// (anyone's), the connects placed on it (its queue) and those of them given a slot, the
/// slots lent to clients (their connects and leased links), and the fleet's reserve, which
/// is never lent. Its ``FleetAdapter`` owns it; placement, the slots a connect takes, the
/// rotation plan, a standby board's wake-up and the device proxy all ask it, so that no two
/// of them can disagree about whether there is room (when two did, a board was handed back
/// and forth without end). A plain value: what it is told, and what it answers.
struct AdapterLedger: Sendable, Equatable {
    /// Most links at once (at least 1).
    let limit: Int
    /// Of those, kept for the fleet's boards: never lent to clients (at most the limit).
    let reserve: Int
    /// The links BlueZ shows through the adapter, as last read from its objects (``linksShown(_:)``).
    private(set) var links: Set<BoardAddress> = []
    /// Connects placed here and not finished (queued or running), in the order they were
    /// placed: the adapter's connect queue.
    private(set) var placed: [BoardAddress] = []
    /// Those of them given a slot: they hold it before BlueZ shows their link.
    private(set) var linking: Set<BoardAddress> = []
    /// Slots lent to clients, by device.
    private(set) var lent: [BoardAddress: Loan] = [:]

    /// What a slot lent to a client is for.
    enum Loan: Sendable, Equatable {
        /// A client's connect, given the slot (``lend(_:)``).
        case connecting
        /// A link a client holds (``lease(_:)``): never given away to rotate.
        case leased
    }

    /// Why a slot is not lent: clients hold (or are connecting) `lent` of the `lendable`.
    struct Refusal: Error, Sendable, Equatable {
        let lent: Int
        let lendable: Int
    }

    init(limit: Int, reserve: Int) {
        self.limit = max(1, limit)
        self.reserve = min(max(0, reserve), self.limit)
    }

    // MARK: What it counts

    /// The slots held now (but `board`'s): links up, and connects given a slot that BlueZ
    /// does not show yet.
    func held(except board: BoardAddress? = nil) -> Set<BoardAddress> {
        var held = links.union(linking)
        if let board { held.remove(board) }
        return held
    }

    /// The slots promised (but `board`'s): those held, and the connects queued here that will
    /// each take one. Placement counts these: boards placed at the same moment see each other.
    func committed(except board: BoardAddress? = nil) -> Set<BoardAddress> {
        var committed = held().union(placed)
        if let board { committed.remove(board) }
        return committed
    }

    /// The slots `board` could be given here (none promised to it counted as taken).
    func free(for board: BoardAddress? = nil) -> Int { max(0, limit - committed(except: board).count) }

    /// The adapter at `path` as placement weighs it for `board`: its slots not promised to
    /// another, its queue, and `board`'s signal and recent failures there.
    func candidate(path: AdapterPath, for board: BoardAddress, rssi: Int?, recentFailures: Int, bonded: Bool = false)
        -> Placement.Candidate
    {
        Placement.Candidate(
            path: path, rssi: rssi, freeSlots: free(for: board), connectsInProgress: placed.count, recentFailures: recentFailures,
            bonded: bonded)
    }

    /// The boards placed here that wait for a slot (not given one yet), in queue order.
    var queued: [BoardAddress] { placed.filter { !linking.contains($0) } }

    /// Where `board` stands in the queue, if it is in it: how many wait ahead of it, or given
    /// its slot (nil `ahead`).
    func place(of board: BoardAddress) -> (inQueue: Bool, ahead: Int?) {
        guard placed.contains(board) else { return (false, nil) }
        if linking.contains(board) { return (true, nil) }
        return (true, placed.prefix { $0 != board }.filter { !linking.contains($0) }.count)
    }

    /// How many slots clients may hold here: the limit less the fleet's reserve.
    var lendable: Int { limit - reserve }

    /// Whether a client holds `device`'s link through here.
    func isLeased(_ device: BoardAddress) -> Bool { lent[device] == .leased }

    // MARK: What it is told

    /// BlueZ shows these links through the adapter now.
    mutating func linksShown(_ shown: some Sequence<BoardAddress>) {
        links = Set(shown)
    }

    /// Placement chose the adapter for `board`'s connect: it joins the queue (once).
    mutating func claim(_ board: BoardAddress) {
        if !placed.contains(board) { placed.append(board) }
    }

    /// `board` was given a slot here and connects: it holds the slot from now on, until its
    /// connect is done (``unclaim(_:)``), after which BlueZ's link holds it.
    mutating func linking(_ board: BoardAddress) {
        claim(board)
        linking.insert(board)
    }

    /// `board`'s connect is done (or gave up): it leaves the queue.
    mutating func unclaim(_ board: BoardAddress) {
        placed.removeAll { $0 == board }
        linking.remove(board)
    }

    /// A client's connect of `device` may take a slot here: lent, unless clients hold every
    /// slot the adapter lends. A device lent one already keeps it.
    mutating func lend(_ device: BoardAddress) -> Refusal? {
        if lent[device] != nil { return nil }
        guard lent.count < lendable else { return Refusal(lent: lent.count, lendable: lendable) }
        lent[device] = .connecting
        return nil
    }

    /// A client's connect of `device` is over; the slot it was lent goes back unless its link
    /// is leased meanwhile.
    mutating func connectEnded(_ device: BoardAddress) {
        if lent[device] == .connecting { lent[device] = nil }
    }

    /// A client holds `device`'s link through here: the slot lent to its connect, or one lent
    /// now (refused when clients hold every slot the adapter lends).
    mutating func lease(_ device: BoardAddress) -> Refusal? {
        if lent[device] == nil, let refusal = lend(device) { return refusal }
        lent[device] = .leased
        return nil
    }

    /// No client holds `device`'s link any more: its slot is no longer lent.
    mutating func leaseEnded(_ device: BoardAddress) {
        if lent[device] == .leased { lent[device] = nil }
    }
}
