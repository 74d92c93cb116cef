/// A received D-Bus signal.
public struct DBusSignal: Sendable {
    /// The sender's unique name (`:1.42`), or `org.freedesktop.DBus` for the bus itself.
    public let sender: String
    public let path: String
    public let interface: String
    public let member: String
    public let arguments: [DBusValue]

    public init(sender: String, path: String, interface: String, member: String, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}
