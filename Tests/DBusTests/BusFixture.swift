import DBus
import Testing
import TestSupport

/// A private bus with two connections: `client` and `service`, where `service` exports
/// `/echo` (interface `com.example.Echo`): `Echo` returns its arguments, `Fail` throws
/// `com.example.Error.Custom`, `Hang` never answers, `Barrier(n)` answers once `n`
/// barrier calls are waiting at the same time.
struct BusFixture: Sendable {
    let bus: PrivateBus
    let client: DBusConnection
    let service: DBusConnection
    /// One element each time a `Hang` call reaches the service.
    let hangs: AsyncStream<Void>

    static let path = "/echo"
    static let interface = "com.example.Echo"

    static func with(_ body: (BusFixture) async throws -> Void) async throws {
        try await PrivateBus.with { bus in
            let client = try await DBusConnection.connect(to: .address(bus.address))
            defer { client.close() }
            let service = try await DBusConnection.connect(to: .address(bus.address))
            defer { service.close() }
            let barrier = Barrier()
            let (hangs, hangArrived) = AsyncStream.makeStream(of: Void.self)
            try service.exportObject(path: path) { call in
                switch call.member {
                case "Echo":
                    return call.arguments
                case "Fail":
                    throw DBusError(name: "com.example.Error.Custom", message: "It failed on purpose.")
                case "Hang":
                    hangArrived.yield()
                    try await Task.sleep(for: .seconds(3600))
                    return []
                case "Barrier":
                    let count = Int(call.arguments.first?.uint32 ?? 0)
                    return [.uint32(UInt32(await barrier.arrive(waitingFor: count)))]
                default:
                    throw DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "No \(call.member).")
                }
            }
            try await body(BusFixture(bus: bus, client: client, service: service, hangs: hangs))
        }
    }

    /// Calls `Echo` on the echo object from the client.
    func echo(_ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await invoke("Echo", arguments)
    }

    /// Calls `member` on the echo object from the client.
    func invoke(
        _ member: String, _ arguments: [DBusValue], timeout: Duration = .seconds(10)
    ) async throws -> [DBusValue] {
        try await client.call(
            destination: service.uniqueName, path: Self.path, interface: Self.interface, member: member,
            arguments: arguments, timeout: timeout)
    }
}

/// Releases every waiter once `count` of them have arrived.
actor Barrier {
    private var waiting: [CheckedContinuation<Int, Never>] = []
    private var arrived = 0

    func arrive(waitingFor count: Int) async -> Int {
        arrived += 1
        let seen = arrived
        if arrived >= count {
            for waiter in waiting { waiter.resume(returning: seen) }
            waiting.removeAll()
            return seen
        }
        return await withCheckedContinuation { waiting.append($0) }
    }
}

struct TimedOut: Error, CustomStringConvertible {
    let description: String
}

/// Runs `body`, failing with `TimedOut` if it takes longer than `seconds`.
func within<T: Sendable>(
    _ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimedOut(description: "\(what) did not finish within \(seconds) s")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// The DBusError a throwing expression produced, or nil if it threw something else or nothing.
func dbusError(_ body: () async throws -> Void) async -> DBusError? {
    do {
        try await body()
        return nil
    } catch let error as DBusError {
        return error
    } catch {
        return nil
    }
}
