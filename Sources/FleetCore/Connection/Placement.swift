import BlueZ

/// Which adapter a board connects through, when the fleet has several: the one that hears
/// it best and has room, weighed against the connects already queued there and the
/// failures it had lately (the way Home Assistant's habluetooth scores connection paths;
/// written afresh for boards). Pure: the caller gives what it knows now.
enum Placement {
    /// One adapter that has seen the board.
    struct Candidate: Sendable, Hashable {
        /// The adapter's BlueZ object path.
        var path: AdapterPath
        /// The board's signal on this adapter, dBm (nil: not reported).
        var rssi: Int?
        /// Connection slots left on the adapter.
        var freeSlots: Int
        /// Connects queued or running on the adapter.
        var connectsInProgress: Int
        /// This board's failed connects through this adapter lately.
        var recentFailures: Int
        /// BlueZ keeps a bond with the device through this adapter.
        var bonded: Bool

        init(path: AdapterPath, rssi: Int?, freeSlots: Int, connectsInProgress: Int, recentFailures: Int, bonded: Bool = false) {
            self.path = path
            self.rssi = rssi
            self.freeSlots = freeSlots
            self.connectsInProgress = connectsInProgress
            self.recentFailures = recentFailures
            self.bonded = bonded
        }
    }

    /// What to do.
    enum Decision: Sendable, Hashable {
        /// Connect through this adapter (it has a free slot).
        case connect(AdapterPath)
        /// Every adapter that hears the board is full: this one is best to free a slot on.
        case full(AdapterPath)
        /// No adapter hears the board.
        case none
    }

    /// An RSSI taken when an adapter does not report one: weaker than any usable signal.
    static let unknownRSSI = -100
    /// Each connect already queued on an adapter counts as this many dB worse.
    static let queuedPenalty = 6
    /// Each recent failure of this board through an adapter counts as this many dB worse.
    static let failurePenalty = 15

    /// The adapter's score for the board: higher is better.
    static func score(_ candidate: Candidate) -> Int {
        (candidate.rssi ?? unknownRSSI) - queuedPenalty * candidate.connectsInProgress
            - failurePenalty * candidate.recentFailures
    }

    /// - Parameters:
    ///   - candidates: the adapters (powered, in use) that have seen the board, which has no
    ///     link (a linked board is not placed).
    ///
    /// A device bonded through an adapter with room connects there, however it is heard: its
    /// keys work through no other (a connect elsewhere reads none of its encrypted values).
    static func choose(_ candidates: [Candidate]) -> Decision {
        func better(_ a: Candidate, _ b: Candidate) -> Bool {
            (score(a), a.freeSlots, b.path) > (score(b), b.freeSlots, a.path)
        }
        let withRoom = candidates.filter { $0.freeSlots > 0 }
        if let best = withRoom.filter(\.bonded).sorted(by: better).first { return .connect(best.path) }
        if let best = withRoom.sorted(by: better).first { return .connect(best.path) }
        if let best = candidates.sorted(by: better).first { return .full(best.path) }
        return .none
    }
}
