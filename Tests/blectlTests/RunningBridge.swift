import Foundation
import TestSupport

/// A real `blefleet-mqtt` (built next to the test bundle): the MQTT bridge as a client of a
/// running daemon's socket, reading the `mqtt:` section of that daemon's configuration file,
/// its log in the daemon's directory. Stopped by `terminate()` or when released.
final class RunningBridge: @unchecked Sendable {
    // Safe: every stored property is immutable after init.
    let process: ChildProcess
    let logFile: URL

    static func binary() throws -> String { try builtExecutable("blefleet-mqtt") }

    init(for daemon: RunningDaemon, arguments: [String] = []) throws {
        logFile = daemon.directory.appendingPathComponent("blefleet-mqtt-\(UUID().uuidString.prefix(6)).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let log = try FileHandle(forWritingTo: logFile)
        defer { try? log.close() }
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM"] {
            environment[key] = nil
        }
        process = try ChildProcess(
            try Self.binary(),
            ["--config", daemon.configFile.path, "--socket", daemon.socket, "--log-target", "stderr"]
                + (ProcessInfo.processInfo.environment["BLEFLEET_TEST_LOG"] != nil ? ["--log-level", "debug"] : []) + arguments,
            environment: environment, stdout: log.fileDescriptor, stderr: log.fileDescriptor)
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// SIGTERM, then waits (bounded; SIGKILL after) and returns the exit status.
    @discardableResult
    func terminate(timeout: TimeInterval = 15) -> Int32 { process.terminate(timeout: timeout) }

    deinit { terminate() }

    /// A testbed, a daemon serving it and a bridge following the daemon, for the duration
    /// of `body`. An error from `body` comes with the end of the bridge's log.
    static func with<T>(
        lane: Lane = .bluezoo, boards: Int = 5, configuration: String,
        _ body: (Testbed, RunningDaemon, RunningBridge) async throws -> T
    ) async throws -> T {
        try await RunningDaemon.with(lane: lane, boards: boards, configuration: configuration) { testbed, daemon in
            let bridge = try RunningBridge(for: daemon)
            defer { bridge.terminate() }
            do {
                return try await body(testbed, daemon, bridge)
            } catch {
                let tail = bridge.log.split(separator: "\n", omittingEmptySubsequences: false).suffix(80).joined(separator: "\n")
                throw FixtureError("\(error)\n--- the end of blefleet-mqtt's log ---\n\(tail)")
            }
        }
    }
}
