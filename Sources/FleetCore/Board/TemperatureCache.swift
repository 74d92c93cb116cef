/// Last temperature per board with the time it was received; a reading is fresh while its
/// age is at most ``maxAge``. Time is an input, so tests control it.
public struct TemperatureCache: Sendable {
    /// One cached reading.
    public struct Entry: Sendable, Hashable {
        public let value: Celsius
        public let receivedAt: ContinuousClock.Instant

        public init(value: Celsius, receivedAt: ContinuousClock.Instant) {
            self.value = value
            self.receivedAt = receivedAt
        }

        /// Age of the reading at `now`.
        public func age(at now: ContinuousClock.Instant) -> Duration { receivedAt.duration(to: now) }
    }

    /// Readings older than this are not served from the cache.
    public var maxAge: Duration
    private var entries: [BoardAddress: Entry] = [:]

    public init(maxAge: Duration) { self.maxAge = maxAge }

    /// Stores a reading (from a read or a notification). An older reading never replaces a
    /// newer one.
    public mutating func record(_ value: Celsius, for board: BoardAddress, at now: ContinuousClock.Instant) {
        if let existing = entries[board], existing.receivedAt > now { return }
        entries[board] = Entry(value: value, receivedAt: now)
    }

    /// The reading for `board` if its age at `now` is ≤ `maxAge` (default ``maxAge``).
    public func fresh(for board: BoardAddress, now: ContinuousClock.Instant, maxAge: Duration? = nil) -> Entry? {
        guard let entry = entries[board], entry.age(at: now) <= (maxAge ?? self.maxAge) else { return nil }
        return entry
    }

    /// The last reading for `board`, however old.
    public func latest(for board: BoardAddress) -> Entry? { entries[board] }

    /// Drops the reading for `board` (forgotten board).
    public mutating func remove(_ board: BoardAddress) { entries[board] = nil }
}
