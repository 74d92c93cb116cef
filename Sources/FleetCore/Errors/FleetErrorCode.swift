/// Stable error codes reported per board. Raw values are wire names.
public enum FleetErrorCode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The board is not advertising.
    case absent
    /// The operation did not finish before its deadline.
    case timeout
    /// The board is not connected and the operation needs a connection.
    case notConnected = "not-connected"
    /// A GATT read, write or notification failed.
    case gattError = "gatt-error"
    /// The Bluetooth adapter is powered off.
    case adapterOff = "adapter-off"
    /// BlueZ is not running or not reachable on D-Bus.
    case bluezUnavailable = "bluez-unavailable"
    /// No such board is known.
    case notFound = "not-found"
    /// No connection slot is free (all connected boards are busy) or the board is busy.
    case busy
    /// The operation was cancelled (by a disconnect, shutdown, or the caller).
    case cancelled
    /// A value given by the caller is invalid.
    case invalidArgument = "invalid-argument"
    /// The operation failed and retrying will not help (e.g. not permitted).
    case failed

    /// Whether the same request may succeed if retried later.
    public var retryable: Bool {
        switch self {
        case .absent, .timeout, .notConnected, .gattError, .adapterOff, .bluezUnavailable, .busy:
            true
        case .notFound, .cancelled, .invalidArgument, .failed:
            false
        }
    }

    public var description: String { rawValue }
}
