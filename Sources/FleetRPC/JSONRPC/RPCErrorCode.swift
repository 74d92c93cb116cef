/// Every error code the daemon answers with. The first five are JSON-RPC 2.0's own; the
/// rest are blefleet's, in the range the specification reserves for servers
/// (-32000…-32099). These numbers are stable: scripts outside the project match on them.
public enum RPCErrorCode: Int, Sendable, Hashable, CaseIterable, Codable {
    /// The frame is not valid JSON (or is nested too deeply, or has malformed UTF-8).
    case parseError = -32700
    /// The JSON is not a valid JSON-RPC 2.0 request object.
    case invalidRequest = -32600
    /// No method of that name.
    case methodNotFound = -32601
    /// A parameter is missing, unknown, or of the wrong type or range.
    case invalidParams = -32602
    /// The daemon failed unexpectedly; details are in its log, not in the reply.
    case internalError = -32603

    /// The caller's user is not allowed to call this method (join the control group).
    case permissionDenied = -32000
    /// No board matched the selection, or the address is unknown.
    case boardNotFound = -32001
    /// The Bluetooth adapter is missing or powered off.
    case adapterUnavailable = -32002
    /// The operation did not finish within its time limit.
    case timeout = -32003
    /// Too many calls in flight on this connection, or a conflicting operation is running.
    case busy = -32004
    /// BlueZ (`org.bluez`) is not reachable on the system bus.
    case bluezUnavailable = -32005
    /// The board is not connected and the operation needs a connection.
    case notConnected = -32006
    /// The board answered a GATT read or write with an error.
    case gattError = -32007
    /// The board lacks the requested GATT service or characteristic.
    case characteristicNotFound = -32008
    /// The daemon is shutting down and accepts no new work.
    case shuttingDown = -32009
    /// The frame is longer than the daemon accepts; the connection is closed after this reply.
    case frameTooLarge = -32010

    /// One line saying what the code means.
    public var meaning: String {
        switch self {
        case .parseError: return "The frame is not valid JSON."
        case .invalidRequest: return "The JSON is not a valid JSON-RPC 2.0 request."
        case .methodNotFound: return "No method of that name."
        case .invalidParams: return "A parameter is missing, unknown, or of the wrong type or range."
        case .internalError: return "The daemon failed unexpectedly; details are in its log."
        case .permissionDenied: return "The caller's user may not call this method."
        case .boardNotFound: return "No board matched the selection, or the address is unknown."
        case .adapterUnavailable: return "The Bluetooth adapter is missing or powered off."
        case .timeout: return "The operation did not finish within its time limit."
        case .busy: return "Too many calls in flight, or a conflicting operation is running."
        case .bluezUnavailable: return "BlueZ is not reachable on the system bus."
        case .notConnected: return "The board is not connected."
        case .gattError: return "The board answered a GATT read or write with an error."
        case .characteristicNotFound: return "The board lacks the requested GATT service or characteristic."
        case .shuttingDown: return "The daemon is shutting down."
        case .frameTooLarge: return "The frame is longer than the daemon accepts."
        }
    }
}
