public import JSONRPC

/// blefleet's error codes, in the range JSON-RPC 2.0 reserves for servers (-32000…-32099).
/// These numbers are stable: scripts outside the project match on them.
extension RPCErrorCode {
    /// The caller's user is not allowed to call this method (join the control group).
    public static let permissionDenied = RPCErrorCode(
        -32000, name: "permissionDenied", meaning: "The caller's user may not call this method.")
    /// No board matched the selection, or the address is unknown.
    public static let boardNotFound = RPCErrorCode(
        -32001, name: "boardNotFound", meaning: "No board matched the selection, or the address is unknown.")
    /// The Bluetooth adapter is missing or powered off.
    public static let adapterUnavailable = RPCErrorCode(
        -32002, name: "adapterUnavailable", meaning: "The Bluetooth adapter is missing or powered off.")
    /// The operation did not finish within its time limit.
    public static let timeout = RPCErrorCode(
        -32003, name: "timeout", meaning: "The operation did not finish within its time limit.")
    /// Too many calls in flight on this connection, or a conflicting operation is running.
    public static let busy = RPCErrorCode(
        -32004, name: "busy", meaning: "Too many calls in flight, or a conflicting operation is running.")
    /// BlueZ (`org.bluez`) is not reachable on the system bus.
    public static let bluezUnavailable = RPCErrorCode(
        -32005, name: "bluezUnavailable", meaning: "BlueZ is not reachable on the system bus.")
    /// The board is not connected and the operation needs a connection.
    public static let notConnected = RPCErrorCode(-32006, name: "notConnected", meaning: "The board is not connected.")
    /// The board answered a GATT read or write with an error.
    public static let gattError = RPCErrorCode(
        -32007, name: "gattError", meaning: "The board answered a GATT read or write with an error.")
    /// The board lacks the requested GATT service or characteristic.
    public static let characteristicNotFound = RPCErrorCode(
        -32008, name: "characteristicNotFound", meaning: "The board lacks the requested GATT service or characteristic.")
    /// The daemon is shutting down and accepts no new work.
    public static let shuttingDown = RPCErrorCode(-32009, name: "shuttingDown", meaning: "The daemon is shutting down.")
    /// The frame is longer than the daemon accepts; the connection is closed after this reply.
    public static let frameTooLarge = RPCErrorCode(
        -32010, name: "frameTooLarge", meaning: "The frame is longer than the daemon accepts.")
    /// The history is off (turned off, or its file cannot be opened or written) or failed.
    public static let historyUnavailable = RPCErrorCode(
        -32011, name: "historyUnavailable", meaning: "The history of readings is off or cannot be read.")
    /// A bound on what one user or connection may hold is reached: the device leases one user
    /// may hold (`leases-per-user`), the subscriptions one connection may have. Give one back first.
    public static let limitReached = RPCErrorCode(
        -32012, name: "limitReached", meaning: "A bound on what one user or connection may hold is reached.")
    /// Pairing with a device failed: it or the daemon's agent refused (a passkey missing or
    /// not matching), or it did not answer.
    public static let pairingFailed = RPCErrorCode(
        -32013, name: "pairingFailed", meaning: "Pairing with the device failed: it refused, or a passkey was missing or wrong.")

    /// Every code the daemon answers with: JSON-RPC 2.0's own, then blefleet's.
    public static let allCases: [RPCErrorCode] =
        specified + [
            permissionDenied, boardNotFound, adapterUnavailable, timeout, busy, bluezUnavailable, notConnected, gattError,
            characteristicNotFound, shuttingDown, frameTooLarge, historyUnavailable, limitReached, pairingFailed,
        ]
}

extension RPCError {
    /// The code as one the daemon answers with, if it is one.
    public var knownCode: RPCErrorCode? { RPCErrorCode.allCases.first { $0.rawValue == code } }
}
