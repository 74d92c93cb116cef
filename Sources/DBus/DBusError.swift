/// Every failure of the `DBus` module: a remote D-Bus error (its name and message as the
/// peer sent them) or a local one, named after the standard D-Bus error it corresponds to.
public struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.bluez.Error.Failed`.
    public let name: String
    /// The human-readable message (may be empty when the peer sent none).
    public let message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// The standard error names this module produces locally.
    public enum Name {
        public static let failed = "org.freedesktop.DBus.Error.Failed"
        public static let noReply = "org.freedesktop.DBus.Error.NoReply"
        public static let timeout = "org.freedesktop.DBus.Error.Timeout"
        public static let timedOut = "org.freedesktop.DBus.Error.TimedOut"
        public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
        public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        public static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
        public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
        public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        public static let matchRuleNotFound = "org.freedesktop.DBus.Error.MatchRuleNotFound"
    }

    /// True when the connection to the bus is gone (or was closed).
    public var isDisconnected: Bool { name == Name.disconnected }

    /// True when no reply arrived in time.
    public var isTimeout: Bool {
        name == Name.noReply || name == Name.timeout || name == Name.timedOut
    }

    public var description: String {
        message.isEmpty ? name : "\(name): \(message)"
    }

    static func invalidArgs(_ message: String) -> DBusError {
        DBusError(name: Name.invalidArgs, message: message)
    }

    static func disconnected(_ message: String = "The connection to the D-Bus bus was lost.") -> DBusError {
        DBusError(name: Name.disconnected, message: message)
    }

    static let closed = DBusError(
        name: Name.disconnected, message: "The D-Bus connection was closed.")

    static func noMemory(_ what: String) -> DBusError {
        DBusError(name: Name.noMemory, message: "libdbus ran out of memory while \(what).")
    }
}
