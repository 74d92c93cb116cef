/// Decides whether a board may take a controller connection slot, and which idle boards to
/// release (least recently used first) when the limit is reached. Pure: no I/O, time is an
/// input.
public enum ConnectionSlots {
    /// A board holding (or about to hold) a connection.
    public struct Link: Sendable, Hashable {
        public var address: BoardAddress
        /// Last time a command used the board.
        public var lastUsed: ContinuousClock.Instant
        /// Whether an operation (connect, read, write) is running on it: never evicted.
        public var isBusy: Bool

        public init(address: BoardAddress, lastUsed: ContinuousClock.Instant, isBusy: Bool) {
            self.address = address
            self.lastUsed = lastUsed
            self.isBusy = isBusy
        }
    }

    /// The outcome of ``decide(for:links:limit:queued:)``.
    public enum Decision: Sendable, Hashable {
        /// A slot is free (or the board already holds one): connect.
        case available
        /// Disconnect these idle boards first (least recently used first), then connect: the
        /// first frees this board's slot, the others the slots of the connects queued behind it.
        case evict([BoardAddress])
        /// Every connected board is busy: wait until one is not.
        case noSlot
    }

    /// - Parameters:
    ///   - board: the board that needs a slot.
    ///   - links: boards connected, connecting, or disconnecting (they still hold a slot).
    ///   - limit: maximum simultaneous connections (at least 1).
    ///   - queued: the other boards queued for a slot on the same adapter behind this one,
    ///     for a command: their slots are freed in the same batch (releases run at once,
    ///     so the connects that follow run back to back instead of each waiting for its own
    ///     release).
    public static func decide(for board: BoardAddress, links: [Link], limit: Int, queued: Int = 0) -> Decision {
        if links.contains(where: { $0.address == board }) { return .available }
        let limit = max(1, limit)
        if links.count < limit { return .available }
        let idle = links.filter { !$0.isBusy }.sorted { ($0.lastUsed, $0.address) < ($1.lastUsed, $1.address) }
        guard !idle.isEmpty else { return .noSlot }
        // Over the limit (lowered at runtime): one slot for this board, then one per board queued.
        let wanted = links.count - limit + 1 + max(0, queued)
        return .evict(idle.prefix(wanted).map(\.address))
    }
}
