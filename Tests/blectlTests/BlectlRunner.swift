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
    ) async throws -> BlectlOutput {
        let blectl = try path()
        let command = prefix.isEmpty ? [blectl] + arguments : prefix + [blectl] + arguments
        let result = try await ChildProcess.run(
            command[0], Array(command.dropFirst()), environment: environment,
            timeout: Double(timeout.components.seconds))
        return BlectlOutput(status: result.status, stdout: result.stdout, stderr: result.stderr)
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
