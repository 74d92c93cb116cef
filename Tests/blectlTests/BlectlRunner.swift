import FleetRPC
import Foundation
import TestSupport

/// What a finished `blectl` printed.
struct BlectlOutput: CustomStringConvertible {
    let status: Int32
    let stdout: String
    let stderr: String

    var description: String { "exit \(status)\nstdout:\n\(stdout)\nstderr:\n\(stderr)" }
}

/// Runs the `blectl` built next to the test bundle (`swift build --build-tests`).
enum Blectl {
    static func path() throws -> String {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let candidate = URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("blectl").path
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            throw FixtureError("blectl not found at \(candidate); run `swift build --build-tests` first")
        }
        return candidate
    }

    /// The environment without BLEFLEET_SOCKET or colour settings, plus `extra`.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { key, _ in
            !["BLEFLEET_SOCKET", "NO_COLOR"].contains(key)
        }
        environment.merge(extra) { _, new in new }
        return environment
    }

    /// Runs `blectl arguments…` (or `prefix… blectl arguments…`) and waits at most `timeout`,
    /// killing it after that (the test then fails on the status).
    static func run(
        _ arguments: [String], environment: [String: String] = Blectl.environment(), prefix: [String] = [],
        timeout: Duration = .seconds(20)
    ) throws -> BlectlOutput {
        let process = Process()
        let blectl = try path()
        if prefix.isEmpty {
            process.executableURL = URL(fileURLWithPath: blectl)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: prefix[0])
            process.arguments = Array(prefix.dropFirst()) + [blectl] + arguments
        }
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let stdout = OutputCollector(out.fileHandleForReading)
        let stderr = OutputCollector(err.fileHandleForReading)
        let seconds = Double(timeout.components.seconds)
        if exited.wait(timeout: .now() + seconds) == .timedOut {
            process.terminate()
            _ = exited.wait(timeout: .now() + 5)
        }
        return BlectlOutput(status: process.terminationStatus, stdout: stdout.finish(), stderr: stderr.finish())
    }
}

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

    func error(_ code: Int, _ message: String) -> String {
        JSONValue.object(["jsonrpc": "2.0", "id": id, "error": ["code": .int(Int64(code)), "message": .string(message)]])
            .description + "\n"
    }
}

/// Requests the test server received, in order.
final class Requests: @unchecked Sendable {
    // Safe: `items` is only touched under `lock`.
    private let lock = NSLock()
    private var items: [Received] = []

    func append(_ request: Received) {
        lock.lock()
        items.append(request)
        lock.unlock()
    }

    var all: [Received] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

/// Drains a pipe on a background thread.
final class OutputCollector: @unchecked Sendable {
    // Safe: `data` is written by the reader thread only, and read after `done` is signalled.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func finish() -> String {
        done.wait()
        return String(decoding: data, as: UTF8.self)
    }
}
