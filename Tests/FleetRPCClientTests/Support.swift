import FleetRPC
import Foundation
import TestSupport


/// Collects lines (thread-safe) so a test can look at what the server got.
final class Box<Value: Sendable>: @unchecked Sendable {
    // Safe: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withValue<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// Echoes every call's params (or its method when it has none) as its result.
@Sendable func echo(_ line: String, _ connection: LineJSONServer.Connection) {
    guard let request = Received(line) else { return }
    connection.send(request.result(request.params ?? .string(request.method)))
}
