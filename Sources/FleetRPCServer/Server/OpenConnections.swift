/// The connections a server has let in and not yet seen close, per peer uid, and the id the
/// next one gets (unique for the server's run: handlers key per-connection state such as
/// subscriptions by it).
struct OpenConnections: Sendable, Hashable {
    private(set) var count = 0
    private var byUser: [UInt32: Int] = [:]
    private var nextID: UInt64 = 1

    var isEmpty: Bool { count == 0 }

    /// The connections of `uid` open now.
    func count(of uid: UInt32) -> Int { byUser[uid, default: 0] }

    /// Counts a connection of `uid` in; returns its id.
    mutating func opened(uid: UInt32) -> UInt64 {
        count += 1
        byUser[uid, default: 0] += 1
        defer { nextID += 1 }
        return nextID
    }

    mutating func closed(uid: UInt32) {
        precondition(count > 0 && byUser[uid, default: 0] > 0, "a connection closed that was never opened")
        count -= 1
        byUser[uid, default: 0] -= 1
        if byUser[uid] == 0 { byUser[uid] = nil }
    }
}
