import Foundation
import TestSupport

/// A real `blefleetd` (built next to the test bundle) on a testbed's bus, with its socket,
/// state directory and log in a temporary directory. Always stopped by `with`.
final class RunningDaemon: @unchecked Sendable {
    // Safe: every stored property is immutable after init.
    let process: ChildProcess
    let directory: URL
    let socket: String
    let logFile: URL
    /// The configuration file the daemon was started with.
    var configFile: URL { directory.appendingPathComponent("blefleetd.conf") }

    static func binary() throws -> String { try builtExecutable("blefleetd") }

    /// Starts the daemon; `launcher` (e.g. systemd-socket-activate …) runs it when given.
    init(
        busAddress: String, configuration: String = "socket-group: root\n", arguments: [String] = [],
        environment extra: [String: String] = [:], launcher: [String] = [], stateDirectory: String? = nil
    ) throws {
        directory = try makeTemporaryDirectory(prefix: "blefleetd")
        socket = directory.appendingPathComponent("blefleetd.sock").path
        logFile = directory.appendingPathComponent("blefleetd.log")
        let config = directory.appendingPathComponent("blefleetd.conf")
        try configuration.write(to: config, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let daemonArguments = [
            "--config", config.path, "--socket", socket,
            "--state-dir", stateDirectory ?? directory.appendingPathComponent("state").path,
            "--bus", busAddress, "--log-target", "stderr",
        ] + arguments
        let command = launcher + [try Self.binary()] + daemonArguments
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM"] {
            environment[key] = nil
        }
        environment.merge(extra) { _, new in new }
        let log = try FileHandle(forWritingTo: logFile)
        defer { try? log.close() }
        process = try ChildProcess(
            command[0], Array(command.dropFirst()), environment: environment,
            stdout: log.fileDescriptor, stderr: log.fileDescriptor)
    }

    /// Waits (bounded) until the socket accepts a connection.
    func waitUntilServing(timeout: TimeInterval = 15) async throws {
        try await eventually("blefleetd serves \(socket)", within: .seconds(timeout), every: .milliseconds(50), otherwise: "its log:\n\(log)") {
            if let status = process.status {
                throw FixtureError("blefleetd exited (\(status)) before serving:\n\(log)")
            }
            return Self.accepts(socket)
        }
    }

    static func accepts(_ path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// The log's last `lines` lines, without the lines of clients coming and going (a test
    /// that polls the daemon makes most of them).
    func logTail(_ lines: Int) -> String {
        log.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains("Client connected") && !$0.contains("Client disconnected") }
            .suffix(lines).joined(separator: "\n")
    }

    /// SIGTERM, then waits
    /// (bounded; SIGKILL after) and returns the exit status.
    @discardableResult
    func terminate(timeout: TimeInterval = 15) -> Int32 { process.terminate(timeout: timeout) }

    deinit {
        terminate()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A testbed, and a daemon serving it, for the duration of `body`. On the real lane the
    /// daemon releases links through the VM kernel's management interface, as it does
    /// through this machine's kernel when installed (`BLEFLEET_MGMT_SOCKET`). An error from
    /// `body` comes with the end of the daemon's log, which says what it was doing; with
    /// BLEFLEET_TEST_LOG set the daemon logs at debug level. `stateDirectory`: one of the
    /// caller's, kept after (default: one of the daemon's own, removed with it).
    static func with<T>(
        lane: Lane = .bluezoo, boards: Int = 5, testbedArguments: [String] = [],
        configuration: String = "socket-group: root\n", environment: [String: String] = [:], stateDirectory: String? = nil,
        _ body: (Testbed, RunningDaemon) async throws -> T
    ) async throws -> T {
        try await Testbed.with(lane: lane, boards: boards, extraArguments: testbedArguments) { testbed in
            var environment = environment
            if let relay = testbed.managementSocket, environment["BLEFLEET_MGMT_SOCKET"] == nil {
                environment["BLEFLEET_MGMT_SOCKET"] = relay
            }
            var configuration = configuration
            if ProcessInfo.processInfo.environment["BLEFLEET_TEST_LOG"] != nil, !configuration.contains("log-level:") {
                configuration += "\nlog-level: debug\n"
            }
            let daemon = try RunningDaemon(
                busAddress: testbed.busAddress, configuration: configuration, environment: environment, stateDirectory: stateDirectory)
            defer { daemon.terminate() }
            try await daemon.waitUntilServing()
            do {
                return try await body(testbed, daemon)
            } catch {
                throw FixtureError("\(error)\n--- the end of the daemon's log ---\n\(daemon.logTail(150))")
            }
        }
    }
}
