/// Where a board is in its life as the daemon sees it.
public enum BoardState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Seen by a scan (or remembered), not connected.
    case disconnected
    /// A connection is being made.
    case connecting
    /// Connected, GATT services still being resolved.
    case connected
    /// Connected with the LED and temperature characteristics found: usable.
    case ready
    /// A disconnection is in progress.
    case disconnecting
    /// Remembered but not seen recently: out of range or powered off.
    case absent
}
