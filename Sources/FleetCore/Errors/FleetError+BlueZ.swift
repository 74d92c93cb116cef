import BlueZ

extension ConnectErrorClass {
    /// How a failed connect is retried (the reconnect policy's input).
    init(_ error: BlueZError) {
        switch error {
        case .connectionFailed(.concurrentConnectionLimit, _):
            self = .outOfResources
        case .connectionFailed(let reason, _) where !reason.isRetryable:
            self = .permanent
        case .objectVanished, .doesNotExist, .notFound, .serviceUnavailable:
            self = .absent
        case .notPermitted, .notAuthorized, .authenticationFailed, .notSupported, .invalidArguments,
            .invalidValueLength, .invalidOffset, .alreadyExists, .other:
            self = .permanent
        case .inProgress, .connectionFailed, .failed, .notReady, .notConnected, .alreadyConnected, .timeout,
            .busDisconnected, .notAvailable:
            self = .transient
        }
    }
}

extension FleetError {
    /// A BlueZ failure during GATT work on a board, as the fleet reports it.
    init(gatt error: BlueZError, board: BoardAddress) {
        switch error {
        case .notConnected, .objectVanished:
            self.init(.notConnected, "\(board) disconnected during the operation (\(error)).")
        case .serviceUnavailable:
            self.init(.bluezUnavailable, "BlueZ is not running (\(error.message)).")
        case .timeout:
            self.init(.timeout, "\(board) did not answer in time.")
        case .notReady:
            self.init(.adapterOff, "The adapter is not ready (powered off?).")
        case .inProgress:
            self.init(.busy, "\(board) is busy with another operation (\(error.message)).")
        default:
            self.init(.gattError, "\(board): \(error)")
        }
    }
}
