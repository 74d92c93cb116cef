import FleetCore

/// One classroom and what happens to it, drawn from a seed: the same seed gives the same
/// schedule (and, run by ``SimulationRuntime``, the same run).
public struct Schedule: Sendable, CustomStringConvertible {
    public let seed: UInt64
    /// Connection limit of each adapter (hci0, hci1, …).
    public let limits: [Int]
    public let boards: [String]
    /// Which adapters hear each board at first.
    public let ranges: [String: Set<Int>]
    /// Clients reading temperatures while the teacher switches LEDs.
    public let readers: Int
    /// The faults, in time order (from the start).
    public let faults: [(at: Duration, fault: Fault)]
    /// When the last fault is over (everything put back, except what the fleet must mend
    /// itself: a hung controller).
    public let faultsEnd: Duration
    /// How long after `faultsEnd` every wanted LED must be on the boards.
    public let convergenceBound: Duration

    public var description: String {
        "seed \(seed): \(boards.count) boards, adapters with limits \(limits), \(readers) readers, \(faults.count) faults until \(faultsEnd)"
    }

    /// A classroom drawn from `seed`: 1–40 boards, 1–3 adapters with limits 1–7, up to 3
    /// readers, up to 12 faults of every kind in the first minutes.
    /// With `partialRanges`, each adapter hears each board with a chance of 4 in 5 (adapters
    /// in different corners); without, every adapter hears every board (one room), until a
    /// fault moves a board out of one's range.
    public init(
        seed: UInt64, boardRange: ClosedRange<Int> = 1...40, faultCount: ClosedRange<Int> = 0...12,
        partialRanges: Bool = false
    ) {
        var random = SeededRandomNumberGenerator(seed: seed)
        self.seed = seed
        let adapterCount = Int.random(in: 1...3, using: &random)
        limits = (0..<adapterCount).map { _ in Int.random(in: 1...7, using: &random) }
        let count = Int.random(in: boardRange, using: &random)
        boards = (0..<count).map { String(format: "C0:FF:EE:00:%02X:%02X", seed % 256, $0) }
        var ranges: [String: Set<Int>] = [:]
        for board in boards {
            var heard = Set((0..<adapterCount).filter { _ in random.chance(0.8) || !partialRanges })
            if heard.isEmpty { heard.insert(Int.random(in: 0..<adapterCount, using: &random)) }
            ranges[board] = heard
        }
        self.ranges = ranges
        readers = Int.random(in: 0...3, using: &random)

        var faults: [(at: Duration, fault: Fault)] = []
        let window: Duration = .seconds(Int64.random(in: 30...120, using: &random))
        for _ in 0..<Int.random(in: faultCount, using: &random) {
            let at = Duration.seconds(10) + random.duration(.zero...window)
            let back = at + random.duration(.seconds(2)...(.seconds(30)))
            let board = boards.randomElement(using: &random)!
            let adapter = Int.random(in: 0..<adapterCount, using: &random)
            switch Int.random(in: 0..<8, using: &random) {
            case 0, 1:
                faults.append((at, .boardLosesPower(board)))
                faults.append((back, .boardPowered(board)))
            case 2:
                faults.append((at, .boardRefuses(board)))
                faults.append((back, .boardLosesPower(board)))
                faults.append((back + .seconds(1), .boardPowered(board)))
            case 3:
                faults.append((at, .boardLeaves(board, adapter: adapter)))
                faults.append((back, .boardReturns(board, adapter: adapter)))
            case 4:
                // Both kinds of hang: a transport that stalls with its links alive at the
                // boards, and a dead controller whose links end at the boards (issue 52).
                faults.append((at, .hang(adapter: adapter, linksLive: Bool.random(using: &random))))
            case 5:
                faults.append((at, .slow(adapter: adapter, by: random.duration(.seconds(1)...(.seconds(8))))))
                faults.append((back, .fast(adapter: adapter)))
            case 6:
                faults.append((at, .unplug(adapter: adapter)))
                faults.append((back, .replug(adapter: adapter)))
            default:
                faults.append((at, .restartBluetoothd(after: random.duration(.seconds(1)...(.seconds(5))))))
            }
        }
        self.faults = faults.sorted { $0.at < $1.at }
        faultsEnd = (self.faults.map(\.at).max() ?? .seconds(10)) + .seconds(6)
        convergenceBound = .seconds(60)
    }
}
