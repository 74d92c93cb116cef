public import DBus
public import Logging

/// BlueZ's D-Bus API as typed Swift: adapters, discovery, devices, GATT.
///
/// Holds the bus connection and the object mirror; `run()` must be running (it keeps the
/// mirror exact) for waits to make progress. Every method throws `BlueZError`.
public final class BlueZClient: Sendable {
    public let connection: DBusConnection
    public let mirror: BlueZObjectMirror
    let logger: Logger

    public init(connection: DBusConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
        self.mirror = BlueZObjectMirror(connection: connection, logger: logger)
    }

    /// Keeps the mirror in sync until cancelled; throws when the bus connection is lost.
    public func run() async throws {
        try await mirror.run()
    }

    /// Calls a BlueZ method, mapping every failure to `BlueZError`.
    @discardableResult
    func call(
        _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
        timeout: Duration
    ) async throws -> [DBusValue] {
        do {
            return try await connection.call(
                destination: BlueZInterfaces.service, path: path, interface: interface,
                member: member, arguments: arguments, timeout: timeout)
        } catch {
            throw BlueZError(error)
        }
    }

    func setProperty(_ path: String, _ interface: String, _ name: String, _ value: DBusValue, timeout: Duration)
        async throws
    {
        try await call(
            path, BlueZInterfaces.properties, "Set", [.string(interface), .string(name), .variant(value)],
            timeout: timeout)
    }
}
