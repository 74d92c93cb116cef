/// The phase of a board as the outside world sees it (RPC, CLI, events).
///
/// Raw values are stable wire names; only ``ready`` means commands can run now.
public enum BoardPhase: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Known and present, not connected, nothing pending.
    case discovered
    /// Known and heard, not connected: every connection slot of its adapter is taken, so
    /// it waits its turn (no connect, no retry) until a command needs it or a slot frees.
    case standby
    /// A connect is queued or in flight.
    case connecting
    /// Connected; waiting for GATT services to be resolved.
    case resolving
    /// Connected with services resolved: usable.
    case ready
    /// A requested disconnect is in progress.
    case disconnecting
    /// A connect failed; a retry is scheduled.
    case backingOff = "backing-off"
    /// Not advertising (or gone from BlueZ); waits for its next advertisement.
    case absent
    /// The adapter is off; nothing happens until it is powered on.
    case waitingForAdapter = "waiting-for-adapter"
    /// Connecting failed permanently (e.g. not permitted); no automatic retries.
    case failed

    public var description: String { rawValue }

}
