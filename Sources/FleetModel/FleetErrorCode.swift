/// Why an operation failed on one board: stable codes, their raw values the wire names
/// scripts match on (`blefleet-rpc(7)`).
public enum FleetErrorCode: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The board is not advertising (out of range or powered off).
    case absent
    /// The operation did not finish before its deadline.
    case timeout
    /// The board is not connected and the operation needs a connection.
    case notConnected = "not-connected"
    /// The board answered a GATT request with an error, or a GATT call failed.
    case gattError = "gatt-error"
    /// The Bluetooth adapter is powered off or missing.
    case adapterOff = "adapter-off"
    /// BlueZ is not running or not reachable on D-Bus.
    case bluezUnavailable = "bluez-unavailable"
    /// No connection slot is free (all connected boards are busy) or the board is busy.
    case busy
    /// Reserved: the board lacks the service or characteristic (this version says `gatt-error`).
    case notSupported = "not-supported"
    /// Reserved: connecting failed (this version says `timeout`, `absent` or `failed`).
    case connectFailed = "connect-failed"
    /// Reserved: an unexpected failure; the daemon's log has details.
    case internalError = "internal"
    /// No such board is known (it was forgotten while the call ran).
    case notFound = "not-found"
    /// The operation was cancelled (by a disconnect, shutdown, or the caller).
    case cancelled
    /// A value given by the caller is invalid.
    case invalidArgument = "invalid-argument"
    /// The operation failed and retrying will not help (e.g. not permitted); a new command retries.
    case failed
    /// A bound on what one user or connection may hold is reached (device leases per user,
    /// subscriptions per connection): give one back first.
    case limitReached = "limit-reached"

    /// Whether the same request may succeed if retried later.
    public var retryable: Bool {
        switch self {
        case .absent, .timeout, .notConnected, .gattError, .adapterOff, .bluezUnavailable, .busy, .connectFailed:
            true
        case .notFound, .cancelled, .invalidArgument, .failed, .notSupported, .internalError, .limitReached:
            false
        }
    }

    public var description: String { rawValue }
}
