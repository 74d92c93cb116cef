import BlueZ

/// How long a call needs when more of its boards need a link than there are free slots:
/// each board needing one connects through the adapter placement gives it, each adapter
/// connects one board at a time (a rotation: a slot freed, the next board connected and
/// resolved), and the adapters rotate in parallel. Pure: what each adapter holds and how fast it rotates are
/// inputs.
enum RotationPlan {
    /// One usable adapter as the plan sees it.
    struct Adapter: Sendable, Hashable {
        var path: AdapterPath
        /// Slots free now (its limit less the links held or being made there).
        var free: Int
        /// Boards of other calls already queued there: they go first.
        var ahead: Int
        /// How long one rotation takes there.
        var rotation: Duration
        /// How long before its first connect (an adapter just powered on listens first: the
        /// boards are heard again before they are connected).
        var startup: Duration

        init(path: AdapterPath, free: Int, ahead: Int, rotation: Duration, startup: Duration = .zero) {
            self.path = path
            self.free = free
            self.ahead = ahead
            self.rotation = rotation
            self.startup = startup
        }
    }

    /// The time the rotations take: every board needing a link (`heard`: the signal each
    /// usable adapter that hears it has of it, by path; empty when none is known to, then any
    /// may take it) is placed as ``Placement`` would place it: on a free slot if an adapter
    /// that hears it has one, else queued where it scores best (its signal, less the
    /// adapter's queue); each adapter then works through its queue, one rotation at a time.
    /// The answer is the adapter that finishes last; zero when the free slots cover them.
    static func rotations(of heard: [[AdapterPath: Int]], on adapters: [Adapter]) -> Duration {
        guard !adapters.isEmpty else { return .zero }
        var free = Dictionary(uniqueKeysWithValues: adapters.map { ($0.path, $0.free) })
        var queued = Dictionary(uniqueKeysWithValues: adapters.map { ($0.path, $0.ahead) })
        let paths = Set(adapters.map(\.path))
        for signals in heard {
            let known = signals.filter { paths.contains($0.key) }
            let candidates = known.isEmpty ? Dictionary(uniqueKeysWithValues: paths.map { ($0, Placement.unknownRSSI) }) : known
            func better(_ a: (key: AdapterPath, value: Int), _ b: (key: AdapterPath, value: Int)) -> Bool {
                let scoreA = a.value - Placement.queuedPenalty * (queued[a.key] ?? 0)
                let scoreB = b.value - Placement.queuedPenalty * (queued[b.key] ?? 0)
                return (scoreA, b.key) > (scoreB, a.key)
            }
            if let roomy = candidates.filter({ (free[$0.key] ?? 0) > 0 }).sorted(by: better).first {
                free[roomy.key, default: 0] -= 1
            } else if let best = candidates.sorted(by: better).first {
                queued[best.key, default: 0] += 1
            }
        }
        return adapters.map { adapter in
            let queue = queued[adapter.path] ?? 0
            let used = queue > 0 || (free[adapter.path] ?? 0) < adapter.free
            return used ? adapter.startup + adapter.rotation * queue : .zero
        }.max() ?? .zero
    }
}
