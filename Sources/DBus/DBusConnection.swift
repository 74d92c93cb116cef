public import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A private connection to a D-Bus bus, usable from any task.
///
/// One dedicated thread owns the libdbus connection (see `DBusEngine`); calls from any
/// number of tasks are queued to it and may be in flight at once. When the bus goes away,
/// every pending call and every signal stream fails with a ``DBusError`` whose
/// ``DBusError/isDisconnected`` is true. Closing (or releasing the last reference to) the
/// connection ends it the same way.
public final class DBusConnection: Sendable {
    let engine: DBusEngine
    /// The connection's unique name on the bus, e.g. `:1.42`.
    public let uniqueName: String

    private init(engine: DBusEngine, uniqueName: String) {
        self.engine = engine
        self.uniqueName = uniqueName
    }

    /// Opens a private connection and registers with the bus (`Hello`).
    /// `.system` honours `DBUS_SYSTEM_BUS_ADDRESS`.
    public static func connect(to bus: DBusBusAddress, logger: Logger? = nil) async throws -> DBusConnection {
        var environment: [String: String] = [:]
        for key in ["DBUS_SYSTEM_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"] {
            if let value = getenv(key) { environment[key] = String(cString: value) }
        }
        let address = try bus.resolve(environment: environment)
        let logger = logger ?? Logger(label: "dbus", factory: { _ in SwiftLogNoOpLogHandler() })
        let engine = try DBusEngine(logger: logger)
        let uniqueName = try await withCheckedThrowingContinuation { continuation in
            engine.start(address: address, continuation: continuation)
        }
        return DBusConnection(engine: engine, uniqueName: uniqueName)
    }

    deinit { close() }

    /// False once the connection was closed or lost.
    public var isConnected: Bool {
        engine.shared.withLock { $0.terminated == nil }
    }

    /// Closes the connection: pending calls and streams fail with `Disconnected`.
    public func close() {
        engine.requestClose()
    }

    // MARK: Calls

    /// Calls a method and returns the reply's arguments.
    ///
    /// Throws ``DBusError``: the remote error (name and message); `NoReply` after
    /// `timeout`; `Disconnected` when the bus is lost; `InvalidArgs` for bad local input
    /// (invalid names, object paths, signatures, strings containing NUL). Cancelling the
    /// awaiting task cancels the call and throws `CancellationError`.
    public func call(
        destination: String, path: String, interface: String, member: String,
        arguments: [DBusValue] = [], timeout: Duration = .seconds(25)
    ) async throws -> [DBusValue] {
        let message = try DBusMessage.methodCall(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        let reply = try await engine.call(message, timeout: timeout)
        if reply.isError { throw reply.asError }
        return try reply.arguments()
    }

    /// Emits a signal (fire and forget). Throws `InvalidArgs` for bad input and
    /// `Disconnected` once the connection is gone.
    public func emitSignal(path: String, interface: String, member: String, arguments: [DBusValue]) throws {
        let message = try DBusMessage.signal(path: path, interface: interface, member: member, arguments: arguments)
        try engine.enqueue(.send(message))
    }

    // MARK: Signals

    /// Default number of undelivered signals a stream buffers (see ``DBusSignalStream``).
    public static let defaultSignalBufferLimit = 4096

    /// Subscribes to signals matching `rule`. Once this returns, the bus has accepted the
    /// match (`AddMatch`) and matching signals are delivered. `RemoveMatch` is sent when the
    /// consumer stops: iteration ends, its task is cancelled, or the stream is released.
    public func signals(
        matching rule: DBusMatchRule, bufferLimit: Int = DBusConnection.defaultSignalBufferLimit
    ) async throws -> DBusSignalStream {
        try rule.validate()
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: DBusSignal.self, bufferingPolicy: .bufferingOldest(max(1, bufferLimit)))
        let (id, newName) = try engine.addSubscription(rule, continuation: continuation)
        let engine = self.engine
        continuation.onTermination = { _ in engine.removeSubscription(id: id) }
        let token = DBusSubscriptionToken(engine: engine, id: id)
        do {
            if let newName { try await engine.trackOwner(of: newName) }
            _ = try await engine.busCall("AddMatch", [.string(rule.ruleString)])
        } catch {
            engine.removeSubscription(id: id, addFailed: true)
            throw error
        }
        return DBusSignalStream(base: stream, token: token)
    }

    // MARK: Names

    /// The unique name owning `name`, or nil when nobody owns it.
    public func nameOwner(of name: String) async throws -> String? {
        try DBusNames.validateBusName(name)
        do {
            return try await engine.busCall("GetNameOwner", [.string(name)]).first?.string
        } catch let error as DBusError where error.name == DBusError.Name.nameHasNoOwner {
            return nil
        }
    }

    /// `NameOwnerChanged` for `name`, as (old, new) owners; nil stands for "none".
    public func nameOwnerChanges(of name: String) async throws -> DBusNameOwnerChangeStream {
        try DBusNames.validateBusName(name)
        let signals = try await signals(matching: DBusEngine.ownerChangeRule(for: name))
        return DBusNameOwnerChangeStream(signals: signals)
    }

    /// Flags for ``requestName(_:flags:)`` (`DBUS_NAME_FLAG_*`).
    public struct RequestNameFlags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let allowReplacement = RequestNameFlags(rawValue: 1)
        public static let replaceExisting = RequestNameFlags(rawValue: 2)
        public static let doNotQueue = RequestNameFlags(rawValue: 4)
    }

    /// Asks the bus for a well-known name; returns the `RequestName` result code
    /// (1 primary owner, 2 in queue, 3 exists, 4 already owner).
    @discardableResult
    public func requestName(_ name: String, flags: RequestNameFlags = [.doNotQueue]) async throws -> UInt32 {
        try DBusNames.validateBusName(name)
        let reply = try await engine.busCall("RequestName", [.string(name), .uint32(flags.rawValue)])
        return reply.first?.uint32 ?? 0
    }

    /// Gives up a well-known name; returns the `ReleaseName` result code (1 released,
    /// 2 non-existent, 3 not owner).
    @discardableResult
    public func releaseName(_ name: String) async throws -> UInt32 {
        try DBusNames.validateBusName(name)
        let reply = try await engine.busCall("ReleaseName", [.string(name)])
        return reply.first?.uint32 ?? 0
    }

    // MARK: Exported objects

    /// Answers method calls to `path` (any interface) with `handler`, each call in its own
    /// task. Calls to other paths get `UnknownMethod` from libdbus.
    public func exportObject(path: String, handler: @escaping DBusMethodHandler) throws {
        try DBusNames.validateObjectPath(path)
        let result: DBusError? = engine.shared.withLock { s in
            if let error = s.terminated { return error }
            s.objects[path] = handler
            return nil
        }
        if let result { throw result }
    }

    /// Stops answering calls to `path`.
    public func unexportObject(path: String) {
        _ = engine.shared.withLock { $0.objects.removeValue(forKey: path) }
    }
}
