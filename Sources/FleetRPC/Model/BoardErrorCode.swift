/// Why an operation failed on one board of a fleet-wide call. Stable strings: scripts match on them.
public enum BoardErrorCode: String, Sendable, Hashable, Codable, CaseIterable {
    /// The board is not in range (not seen by the adapter).
    case absent
    /// The board did not answer in time.
    case timeout
    /// The board is not connected and the operation needs a connection.
    case notConnected = "not-connected"
    /// The board answered a GATT request with an error.
    case gattError = "gatt-error"
    /// The Bluetooth adapter is powered off or missing.
    case adapterOff = "adapter-off"
    /// BlueZ is not reachable.
    case bluezUnavailable = "bluez-unavailable"
    /// Another operation on this board is in progress.
    case busy
    /// The board lacks the service or characteristic.
    case notSupported = "not-supported"
    /// Connecting failed (BlueZ gave up or the link dropped).
    case connectFailed = "connect-failed"
    /// An unexpected failure; the daemon's log has details.
    case internalError = "internal"
    /// The board was forgotten while the call ran.
    case notFound = "not-found"
    /// The operation was cancelled (a disconnect was requested meanwhile, or the daemon stops).
    case cancelled
    /// The request made no sense for this board (e.g. a malformed value).
    case invalidArgument = "invalid-argument"
    /// The board refused the connection for good (pairing or permission); a new command retries.
    case failed
}
