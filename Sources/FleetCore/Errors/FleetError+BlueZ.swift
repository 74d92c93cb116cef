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
        case .attError(let code, _) where code != BlueZError.attUnlikelyError:
            self = .permanent
        case .inProgress, .connectionFailed, .attError, .failed, .notReady, .notConnected, .alreadyConnected, .timeout,
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
        case .attError(let code, _):
            self.init(.gattError, "\(board) refused the GATT request (\(error)\(Self.attErrorName(code).map { ": \($0)" } ?? "")).")
        default:
            self.init(.gattError, "\(board): \(error)")
        }
    }
}

extension FleetError {
    /// The names of the ATT error codes (Core spec Vol 3 Part F 3.4.1.1) a board may answer.
    static func attErrorName(_ code: UInt8) -> String? {
        switch code {
        case 0x01: "invalid handle"
        case 0x02: "read not permitted"
        case 0x03: "write not permitted"
        case 0x04: "invalid PDU"
        case 0x05: "insufficient authentication"
        case 0x06: "request not supported"
        case 0x07: "invalid offset"
        case 0x08: "insufficient authorization"
        case 0x09: "prepare queue full"
        case 0x0a: "attribute not found"
        case 0x0b: "attribute not long"
        case 0x0c: "insufficient encryption key size"
        case 0x0d: "invalid attribute value length"
        case 0x0e: "unlikely error"
        case 0x0f: "insufficient encryption"
        case 0x10: "unsupported group type"
        case 0x11: "insufficient resources"
        case 0x80...0x9f: "application error"
        default: nil
        }
    }
}
