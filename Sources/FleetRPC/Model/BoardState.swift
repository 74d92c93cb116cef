/// Where a board is in its life as the daemon sees it (the daemon's board phases).
public enum BoardState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Seen by a scan (or remembered), not connected, nothing pending.
    case discovered
    /// Heard, not connected: waits for a free connection slot (more boards than slots);
    /// connected when a command needs it.
    case standby
    /// A connection is being made (or queued behind another board's).
    case connecting
    /// Connected, GATT services still being resolved.
    case resolving
    /// Connected with services resolved: usable.
    case ready
    /// A disconnection is in progress.
    case disconnecting
    /// Waiting before the next connection attempt after a failure or a lost link.
    case backingOff = "backing-off"
    /// Remembered but not advertising: out of range or powered off.
    case absent
    /// The adapter is powered off or missing (or BlueZ is not running).
    case waitingForAdapter = "waiting-for-adapter"
    /// Gave up after a permanent error; a command tries again.
    case failed
}
