/// Decides whether a board may take a controller connection slot, and which idle board to
/// evict (least recently used) when the limit is reached. Pure: no I/O, time is an input.
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

    /// The outcome of ``decide(for:links:limit:)``.
    public enum Decision: Sendable, Hashable {
        /// A slot is free (or the board already holds one): connect.
        case available
        /// Disconnect this idle board first, then connect.
        case evict(BoardAddress)
        /// Every connected board is busy: report ``FleetErrorCode/busy``.
        case noSlot
    }

    /// - Parameters:
    ///   - board: the board that needs a slot.
    ///   - links: boards connected, connecting, or disconnecting (they still hold a slot).
    ///   - limit: maximum simultaneous connections (at least 1).
    public static func decide(for board: BoardAddress, links: [Link], limit: Int) -> Decision {
        if links.contains(where: { $0.address == board }) { return .available }
        if links.count < max(1, limit) { return .available }
        let idle = links.filter { !$0.isBusy }
        guard let victim = idle.min(by: { ($0.lastUsed, $0.address) < ($1.lastUsed, $1.address) }) else {
            return .noSlot
        }
        return .evict(victim.address)
    }
}
