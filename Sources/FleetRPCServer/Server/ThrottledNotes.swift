import Synchronization

/// Log lines about one user that could come by the thousand (refused calls, refused
/// connections): the first is written, then at most one a minute per user, saying how many
/// were not.
final class ThrottledNotes: Sendable {
    private struct Entry {
        var last: ContinuousClock.Instant
        var unlogged: Int
    }

    private let entries = Mutex<[UInt32: Entry]>([:])
    let interval: Duration

    init(interval: Duration = .seconds(60)) {
        self.interval = interval
    }

    /// Calls `log` with the count left unlogged since the last line, if a line about `uid`
    /// is due; else counts this one.
    func note(_ uid: UInt32, now: ContinuousClock.Instant = .now, _ log: (Int) -> Void) {
        let due: Int? = entries.withLock { table in
            if var entry = table[uid], now - entry.last < interval {
                entry.unlogged += 1
                table[uid] = entry
                return nil
            }
            let unlogged = table[uid]?.unlogged ?? 0
            if table.count >= 4096 { table.removeAll() }
            table[uid] = Entry(last: now, unlogged: 0)
            return unlogged
        }
        if let due { log(due) }
    }
}
