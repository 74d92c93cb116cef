/// Decides whether a board may take a controller connection slot, which idle boards to
/// release (least recently used first) when the limit is reached, and which to release
/// ahead of the connects queued for calls. Pure: no I/O, time is an input.
public enum ConnectionSlots {
    /// A board holding (or about to hold) a connection.
    public struct Link: Sendable, Hashable {
        public var address: BoardAddress
        /// Last time a command used the board.
        public var lastUsed: ContinuousClock.Instant
        /// Whether an operation (connect, read, write) is running on it: never released.
        public var isBusy: Bool
        /// Whether its release is under way: it holds its slot until the link is down, then
        /// the slot is free.
        public var isLeaving: Bool

        public init(address: BoardAddress, lastUsed: ContinuousClock.Instant, isBusy: Bool, isLeaving: Bool = false) {
            self.address = address
            self.lastUsed = lastUsed
            self.isBusy = isBusy
            self.isLeaving = isLeaving
        }
    }

    /// The outcome of ``decide(for:links:limit:)``.
    public enum Decision: Sendable, Hashable {
        /// A slot is free (or the board already holds one): connect.
        case available
        /// Release these idle boards first (least recently used first), then connect.
        case evict([BoardAddress])
        /// Every slot is taken by a busy board or by one whose release is under way: wait
        /// until a link is done or down.
        case noSlot
    }

    /// For the board whose connect is next on its adapter.
    /// - Parameters:
    ///   - board: the board that needs a slot.
    ///   - links: boards connected, connecting, or disconnecting (they still hold a slot).
    ///   - limit: maximum simultaneous connections (at least 1).
    public static func decide(for board: BoardAddress, links: [Link], limit: Int) -> Decision {
        if links.contains(where: { $0.address == board }) { return .available }
        let limit = max(1, limit)
        if links.count < limit { return .available }
        // A release under way (ahead of this connect) frees a slot in a moment.
        if links.contains(where: \.isLeaving) { return .noSlot }
        let idle = leastRecentlyUsedIdle(links)
        guard !idle.isEmpty else { return .noSlot }
        // Over the limit (lowered at runtime): down to it, and one slot for this board.
        return .evict(idle.prefix(links.count - limit + 1).map(\.address))
    }

    /// The idle boards to release now so that the boards queued on the adapter for calls
    /// (`waiting`, each with no link yet) find their slots free when their connect comes:
    /// a link is given away as soon as its work is done, its release running while the
    /// connect before it is still under way. Nothing while the free slots, counting those
    /// whose release is under way, cover the queue.
    public static func releaseAhead(links: [Link], limit: Int, waiting: Int) -> [BoardAddress] {
        let staying = links.filter { !$0.isLeaving }.count
        let free = max(0, max(1, limit) - staying)
        guard waiting > free else { return [] }
        return leastRecentlyUsedIdle(links).prefix(waiting - free).map(\.address)
    }

    private static func leastRecentlyUsedIdle(_ links: [Link]) -> [Link] {
        links.filter { !$0.isBusy && !$0.isLeaving }.sorted { ($0.lastUsed, $0.address) < ($1.lastUsed, $1.address) }
    }
}
