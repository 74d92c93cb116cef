/// A method call received by an object exported with ``DBusConnection/exportObject(path:handler:)``.
public struct DBusMethodCall: Sendable {
    public let sender: String
    public let path: String
    public let interface: String?
    public let member: String
    public let arguments: [DBusValue]
}

/// Answers a method call: the returned values are the reply; a thrown ``DBusError`` is
/// sent as that error, any other error as `org.freedesktop.DBus.Error.Failed`.
public typealias DBusMethodHandler = @Sendable (DBusMethodCall) async throws -> [DBusValue]
