import Foundation
import TestSupport

/// What a finished child process printed.
struct ProcessOutput {
    let status: Int32
    let stdout: String
    let stderr: String

    /// The value of the first `key=value` line on stdout.
    func value(_ key: String) -> String? {
        stdout.split(separator: "\n").first(where: { $0.hasPrefix("\(key)=") })
            .map { String($0.dropFirst(key.count + 1)) }
    }
}

enum Probe {
    /// `systemd-probe`, built next to the test bundle (`swift build --build-tests`).
    static func path() throws -> String {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let candidate = URL(fileURLWithPath: exe).deletingLastPathComponent()
            .appendingPathComponent("systemd-probe").path
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            throw FixtureError("systemd-probe not found at \(candidate); run `swift build --build-tests` first")
        }
        return candidate
    }

    /// The test process's environment without any systemd variables, plus `extra`.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { key, _ in
            !["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID",
              "LISTEN_FDNAMES", "JOURNAL_STREAM"].contains(key)
        }
        environment.merge(extra, uniquingKeysWith: { _, new in new })
        return environment
    }

    /// Runs `systemd-probe arguments…` to completion.
    static func run(
        _ arguments: [String], environment: [String: String], timeout: Duration = .seconds(30)
    ) async throws -> ProcessOutput {
        try await runProcess(try path(), arguments, environment: environment, timeout: timeout)
    }
}

/// Runs a program to completion without blocking the caller's thread; kills it after `timeout`
/// so a hung child never outlives the test.
func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String],
    timeout: Duration = .seconds(30)
) async throws -> ProcessOutput {
    let process = try StartedProcess(executable, arguments, environment: environment)
    let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
    return try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try process.finish(timeout: seconds) })
        }
    }
}
