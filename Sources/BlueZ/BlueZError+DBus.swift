import DBus

extension BlueZError {
    /// The one place where D-Bus errors become `BlueZError`s.
    public init(_ error: any Error) {
        if let error = error as? BlueZError {
            self = error
        } else if let error = error as? DBusError {
            self = BlueZError(dbusName: error.name, message: error.message)
        } else if error is CancellationError {
            self = .timeout("cancelled")
        } else {
            self = .other(name: String(describing: type(of: error)), message: String(describing: error))
        }
    }

    /// Parses a D-Bus error name and message as BlueZ and the bus daemon send them.
    public init(dbusName name: String, message: String) {
        let bluezPrefix = "org.bluez.Error."
        if name.hasPrefix(bluezPrefix) {
            switch name.dropFirst(bluezPrefix.count) {
            case "InProgress": self = .inProgress(message)
            case "Failed":
                if let reason = ConnectionFailure.parse(message) {
                    self = .connectionFailed(reason, message)
                } else if let code = attErrorCode(message) {
                    self = .attError(code, message)
                } else if message == "Not connected" {
                    // src/gatt-client.c: a GATT operation on a device whose link is down.
                    self = .notConnected(message)
                } else {
                    self = .failed(message)
                }
            case "NotPermitted": self = .notPermitted(message)
            case "NotAuthorized": self = .notAuthorized(message)
            case "NotReady": self = .notReady(message)
            case "NotConnected": self = .notConnected(message)
            case "AlreadyConnected": self = .alreadyConnected(message)
            case "AlreadyExists": self = .alreadyExists(message)
            case "DoesNotExist": self = .doesNotExist(message)
            case "NotSupported": self = .notSupported(message)
            case "NotAvailable": self = .notAvailable(message)
            case "InvalidArguments": self = .invalidArguments(message)
            case "InvalidValueLength": self = .invalidValueLength(message)
            case "InvalidOffset": self = .invalidOffset(message)
            case "AuthenticationFailed", "AuthenticationCanceled", "AuthenticationRejected",
                "AuthenticationTimeout", "ConnectionAttemptFailed":
                self = .authenticationFailed(message)
            default: self = .other(name: name, message: message)
            }
            return
        }
        switch name {
        case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownInterface":
            self = .objectVanished(message)
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            self = .serviceUnavailable(message)
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
            "org.freedesktop.DBus.Error.TimedOut":
            self = .timeout(message)
        case "org.freedesktop.DBus.Error.Disconnected":
            self = .busDisconnected(message)
        case "org.freedesktop.DBus.Error.InvalidArgs":
            self = .invalidArguments(message)
        case "org.freedesktop.DBus.Error.AccessDenied":
            self = .notPermitted(message)
        default:
            self = .other(name: name, message: message)
        }
    }
}

/// The code in bluetoothd's "Operation failed with ATT error: 0x0e" (src/gatt-client.c).
private func attErrorCode(_ message: String) -> UInt8? {
    let prefix = "Operation failed with ATT error: 0x"
    guard message.hasPrefix(prefix) else { return nil }
    return UInt8(message.dropFirst(prefix.count), radix: 16)
}

extension ConnectionFailure {
    /// Longest first, so "…-abort-by-local" is not taken for a shorter prefix.
    private static let byLength = allCases.sorted { $0.rawValue.count > $1.rawValue.count }

    /// Finds a known reason string in a `Failed` message (BlueZ sends the bare reason, e.g.
    /// `le-connection-abort-by-local`; older versions prefix text). Unknown `le-connection-*` /
    /// `br-connection-*` strings map to the matching `unknown` reason.
    static func parse(_ message: String) -> ConnectionFailure? {
        let lowered = message.lowercased()
        // Every reason is "le-connection-…" or "br-connection-…": most messages are none.
        guard lowered.contains("-connection-") else { return nil }
        for reason in byLength where lowered.contains(reason.rawValue) {
            return reason
        }
        if lowered.contains("le-connection-") { return .leUnknown }
        if lowered.contains("br-connection-") { return .bredrUnknown }
        return nil
    }
}
