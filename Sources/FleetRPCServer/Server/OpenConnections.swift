/// The connections a server has let in and not yet seen close, and the id the next one gets
/// (unique for the server's run: handlers key per-connection state such as subscriptions by it).
struct OpenConnections: Sendable, Hashable {
    private(set) var count = 0
    private var nextID: UInt64 = 1

    var isEmpty: Bool { count == 0 }

    /// Counts a connection in; returns its id.
    mutating func opened() -> UInt64 {
        count += 1
        defer { nextID += 1 }
        return nextID
    }

    mutating func closed() {
        precondition(count > 0, "a connection closed that was never opened")
        count -= 1
    }
}
