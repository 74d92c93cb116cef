import FleetRPC
import Foundation
import TestSupport

/// A request as the test server received it.
struct Received: Sendable {
    let id: JSONValue
    let method: String
    let params: JSONValue?

    init?(_ line: String) {
        guard let value = try? JSONValue(parsing: line), let method = value["method"]?.stringValue else { return nil }
        id = value["id"] ?? .null
        self.method = method
        params = value["params"]
    }

    func result(_ result: JSONValue) -> String {
        JSONValue.object(["jsonrpc": "2.0", "id": id, "result": result]).description + "\n"
    }

    func error(_ code: Int, _ message: String, data: JSONValue? = nil) -> String {
        var error: [String: JSONValue] = ["code": .int(Int64(code)), "message": .string(message)]
        if let data { error["data"] = data }
        return JSONValue.object(["jsonrpc": "2.0", "id": id, "error": .object(error)]).description + "\n"
    }
}

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
