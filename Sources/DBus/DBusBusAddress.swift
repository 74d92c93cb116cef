/// Which bus a ``DBusConnection`` connects to.
public enum DBusBusAddress: Sendable, Hashable {
    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS` when set, else the well-known socket.
    case system
    /// The session bus: `DBUS_SESSION_BUS_ADDRESS` (required).
    case session
    /// An explicit D-Bus server address such as `unix:path=/run/x/bus`.
    case address(String)

    static let defaultSystemAddress = "unix:path=/var/run/dbus/system_bus_socket"

    /// The address string handed to libdbus, resolved from the environment where needed.
    func resolve(environment: [String: String]) throws(DBusError) -> String {
        switch self {
        case .system:
            if let value = environment["DBUS_SYSTEM_BUS_ADDRESS"], !value.isEmpty { return value }
            return Self.defaultSystemAddress
        case .session:
            guard let value = environment["DBUS_SESSION_BUS_ADDRESS"], !value.isEmpty else {
                throw DBusError(
                    name: DBusError.Name.failed,
                    message: "Cannot connect to the session bus: DBUS_SESSION_BUS_ADDRESS is not set.")
            }
            return value
        case .address(let value):
            guard !value.isEmpty, !value.utf8.contains(0) else {
                throw DBusError.invalidArgs("The D-Bus address \"\(value)\" is empty or contains a NUL byte.")
            }
            return value
        }
    }
}
