public import DBus

/// How a ``BlueZClient`` reaches bluetoothd: a method call on one of its objects, and a feed
/// of its objects and their changes into the client's ``BlueZObjectMirror``.
///
/// The daemon's is the D-Bus connection (``DBusBlueZBus``); a simulated radio implements it
/// with adapters and boards of its own, answering as bluetoothd does (its errors are
/// `DBusError`s with bluetoothd's names, mapped by ``BlueZError``) and feeding the mirror
/// the signals bluetoothd would send.
public protocol BlueZBus: Sendable {
    /// Calls `member` of `interface` on the object at `path` of `org.bluez`.
    func call(
        path: String, interface: String, member: String, arguments: [DBusValue], timeout: Duration
    ) async throws -> [DBusValue]
    /// Keeps `mirror` exact until cancelled; throws when the bus is lost.
    func run(mirror: BlueZObjectMirror) async throws
    /// Ends the connection.
    func close()
}

/// BlueZ on a D-Bus connection (the system bus, or a testbed's).
public struct DBusBlueZBus: BlueZBus {
    public let connection: DBusConnection

    public init(connection: DBusConnection) {
        self.connection = connection
    }

    public func call(
        path: String, interface: String, member: String, arguments: [DBusValue], timeout: Duration
    ) async throws -> [DBusValue] {
        try await connection.call(
            destination: BlueZInterfaces.service, path: path, interface: interface, member: member,
            arguments: arguments, timeout: timeout)
    }

    public func run(mirror: BlueZObjectMirror) async throws {
        try await mirror.run(on: connection)
    }

    public func close() {
        connection.close()
    }
}
