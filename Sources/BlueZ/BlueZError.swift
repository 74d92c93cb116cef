/// Why a BlueZ operation failed, parsed from the D-Bus error BlueZ (or the bus) returned.
///
/// Names follow BlueZ's `src/error.c`: `org.bluez.Error.<Name>`, and for connection
/// failures `org.bluez.Error.Failed` with a reason string such as
/// `le-connection-abort-by-local`. The raw D-Bus name stays available for logs, but callers
/// switch on the cases and ask `isRetryable`.
public enum BlueZError: Error, Sendable, Equatable {
    /// `InProgress`: the same operation is already running; retry shortly.
    case inProgress(String)
    /// `Failed` with a connection failure reason (`le-connection-*`, `br-connection-*`).
    case connectionFailed(ConnectionFailure, String)
    /// `Failed` with "Operation failed with ATT error: 0xNN": a GATT request ended with that
    /// ATT error code (`src/gatt-client.c`, `create_gatt_dbus_error`). BlueZ also ends every
    /// request still pending on a link that is lost this way, with code 0x0e (Unlikely Error:
    /// `src/shared/att.c` fails them with no PDU, which `src/shared/gatt-client.c` reads as
    /// 0x0e), so ``mayMeanLinkLoss`` is true for it.
    case attError(UInt8, String)
    /// `Failed` without a known reason.
    case failed(String)
    case notPermitted(String)
    case notAuthorized(String)
    case notReady(String)
    case notConnected(String)
    case alreadyConnected(String)
    case alreadyExists(String)
    case doesNotExist(String)
    case notSupported(String)
    case notAvailable(String)
    case invalidArguments(String)
    case invalidValueLength(String)
    case invalidOffset(String)
    case authenticationFailed(String)
    /// The object (device, characteristic) is no longer exported: it vanished.
    case objectVanished(String)
    /// `org.bluez` is not on the bus (bluetoothd not running or restarting).
    case serviceUnavailable(String)
    /// No answer in time (D-Bus `NoReply`, or a deadline of ours).
    case timeout(String)
    /// Our own connection to the bus was lost.
    case busDisconnected(String)
    /// A lookup of ours found nothing (no such adapter, device or characteristic).
    case notFound(String)
    /// Any other D-Bus error, kept verbatim.
    case other(name: String, message: String)

    /// Whether trying the same operation again later may succeed.
    public var isRetryable: Bool {
        switch self {
        case .inProgress, .failed, .notReady, .notConnected, .objectVanished,
            .serviceUnavailable, .timeout:
            return true
        case .connectionFailed(let reason, _):
            return reason.isRetryable
        case .attError(let code, _):
            return code == Self.attUnlikelyError
        case .notPermitted, .notAuthorized, .alreadyConnected, .alreadyExists, .doesNotExist,
            .notSupported, .notAvailable, .invalidArguments, .invalidValueLength, .invalidOffset,
            .authenticationFailed, .busDisconnected, .notFound, .other:
            return false
        }
    }

    /// ATT's "Unlikely Error" (Core spec Vol 3 Part F 3.4.1.1), what BlueZ answers for a GATT
    /// request that its link's loss ended.
    public static let attUnlikelyError: UInt8 = 0x0e

    /// Whether the failure may be the link's loss rather than the board's answer: the caller
    /// tells the two apart by the device's link state (`Connected`). Real BlueZ 5.66 answers a
    /// `ReadValue`, `WriteValue` or `StartNotify` whose link is lost during the call with
    /// ``attError(_:_:)`` 0x0e, a call after the link went with `Failed: Not connected`, and a
    /// call on an object that went with `UnknownObject`; a call nobody answers ends as
    /// ``timeout(_:)``.
    public var mayMeanLinkLoss: Bool {
        switch self {
        case .notConnected, .objectVanished, .failed, .timeout: return true
        case .attError(let code, _): return code == Self.attUnlikelyError
        default: return false
        }
    }

    /// The human-readable message that came with the error.
    public var message: String {
        switch self {
        case .inProgress(let m), .connectionFailed(_, let m), .attError(_, let m), .failed(let m), .notPermitted(let m),
            .notAuthorized(let m), .notReady(let m), .notConnected(let m), .alreadyConnected(let m),
            .alreadyExists(let m), .doesNotExist(let m), .notSupported(let m), .notAvailable(let m),
            .invalidArguments(let m), .invalidValueLength(let m), .invalidOffset(let m),
            .authenticationFailed(let m), .objectVanished(let m), .serviceUnavailable(let m),
            .timeout(let m), .busDisconnected(let m), .notFound(let m), .other(_, let m):
            return m
        }
    }
}

/// The reason strings BlueZ puts in `org.bluez.Error.Failed` when a connection attempt fails
/// (`src/error.h`, `ERR_LE_CONN_*` / `ERR_BREDR_CONN_*`).
public enum ConnectionFailure: String, Sendable, CaseIterable {
    case abortByLocal = "le-connection-abort-by-local"
    case createSocket = "le-connection-create-socket"
    case profileUnavailable = "le-connection-profile-unavailable"
    case concurrentConnectionLimit = "le-connection-concurrent-connection-limit"
    case alreadyConnected = "le-connection-already-connected"
    case linkLayerFailure = "le-connection-link-layer-failure"
    case keyMissing = "le-connection-key-missing"
    case gattBrowsing = "le-connection-gatt-browsing"
    case leTimeout = "le-connection-timeout"
    case leUnknown = "le-connection-unknown"
    case pageTimeout = "br-connection-page-timeout"
    case bredrAbortByLocal = "br-connection-abort-by-local"
    case bredrUnknown = "br-connection-unknown"

    /// Transient failures (a retry after a short delay usually works) versus ones that need
    /// something else to change first.
    public var isRetryable: Bool {
        switch self {
        case .keyMissing, .profileUnavailable: return false
        default: return true
        }
    }
}

extension BlueZError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .inProgress: return "operation already in progress: \(message)"
        case .connectionFailed(let reason, _): return "connection failed (\(reason.rawValue))"
        case .attError(let code, _): return "the GATT request failed with ATT error 0x\(code < 0x10 ? "0" : "")\(String(code, radix: 16))"
        case .failed: return "BlueZ operation failed: \(message)"
        case .notPermitted: return "not permitted: \(message)"
        case .notAuthorized: return "not authorized: \(message)"
        case .notReady: return "adapter not ready: \(message)"
        case .notConnected: return "device not connected: \(message)"
        case .alreadyConnected: return "already connected: \(message)"
        case .alreadyExists: return "already exists: \(message)"
        case .doesNotExist: return "does not exist: \(message)"
        case .notSupported: return "not supported: \(message)"
        case .notAvailable: return "not available: \(message)"
        case .invalidArguments: return "invalid arguments: \(message)"
        case .invalidValueLength: return "invalid value length: \(message)"
        case .invalidOffset: return "invalid offset: \(message)"
        case .authenticationFailed: return "authentication failed: \(message)"
        case .objectVanished: return "object vanished: \(message)"
        case .serviceUnavailable: return "BlueZ (org.bluez) is not available: \(message)"
        case .timeout: return "timed out: \(message)"
        case .busDisconnected: return "lost the D-Bus connection: \(message)"
        case .notFound: return "not found: \(message)"
        case .other(let name, _): return "\(name): \(message)"
        }
    }
}

