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
    static func path() throws -> String { try builtExecutable("blectl") }

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
    ) async throws -> BlectlOutput {
        let blectl = try path()
        let command = prefix.isEmpty ? [blectl] + arguments : prefix + [blectl] + arguments
        let result = try await ChildProcess.run(
            command[0], Array(command.dropFirst()), environment: environment,
            timeout: Double(timeout.components.seconds))
        return BlectlOutput(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    /// Starts `blectl arguments…` and gives its stdout line by line as it prints them (the
    /// stream ends when it exits); its stderr goes to the test's.
    static func start(_ arguments: [String]) throws -> (process: ChildProcess, lines: AsyncStream<String>) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw FixtureError("pipe() failed: errno \(errno)") }
        let process: ChildProcess
        do {
            process = try ChildProcess(try path(), arguments, environment: environment(), stdout: ends[1], stderr: 2)
        } catch {
            close(ends[0])
            close(ends[1])
            throw error
        }
        close(ends[1])
        let (lines, sink) = AsyncStream.makeStream(of: String.self)
        let readEnd = ends[0]
        Thread.detachNewThread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(readEnd, &buffer, buffer.count)
                if count <= 0 { break }
                pending += buffer.prefix(count)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    sink.yield(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
            }
            close(readEnd)
            sink.finish()
        }
        return (process, lines)
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
