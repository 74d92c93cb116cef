import Foundation

/// An independent referee of connection slots: `scripts/testbed watch-links`, a D-Bus
/// monitor on the testbed's bus that sees every `Device1.Connect` call and every link BlueZ
/// announces, whoever makes them. It trusts nothing the daemon or the fleet says.
public final class LinkReferee: @unchecked Sendable {
    // Safe: the properties are immutable after init; the child process is only signalled.
    private let child: ChildProcess
    private let output: URL

    /// What the referee saw, per adapter object path.
    public struct Report: Decodable, Sendable {
        /// `Device1.Connect` calls.
        public let connectCalls: [String: Int]
        /// The most links (shown by BlueZ, or asked for and not yet answered) at once.
        public let mostLinks: [String: Int]
        /// The most links and pending connects at the moment of a `Connect` call, that call included.
        public let mostAtConnect: [String: Int]
        /// What was held at that moment, per adapter: each device's "link", "connect" (asked
        /// for, not yet answered) or "this connect"; to read a failure by.
        public let heldAtMost: [String: [String: String]]?

        enum CodingKeys: String, CodingKey {
            case connectCalls = "connect_calls"
            case mostLinks = "most_links"
            case mostAtConnect = "most_at_connect"
            case heldAtMost = "held_at_most"
        }
    }

    /// Starts watching `testbed`'s bus; returns once the monitor is in place.
    public init(watching testbed: Testbed) async throws {
        output = try makeTemporaryDirectory(prefix: "blefleet-referee").appendingPathComponent("report")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        child = try ChildProcess(
            Testbed.script, ["watch-links", "--run-dir", testbed.runDirectory.path],
            stdout: handle.fileDescriptor, stderr: FileHandle.standardError.fileDescriptor)
        let (child, output) = (self.child, self.output)
        do {
            try await eventually("scripts/testbed watch-links watches the bus", within: .seconds(30)) {
                guard child.isRunning else { throw FixtureError("scripts/testbed watch-links exited") }
                return (try? String(contentsOf: output, encoding: .utf8))?.hasPrefix("watching") == true
            }
        } catch {
            child.signal(SIGKILL)
            throw FixtureError("scripts/testbed watch-links did not start watching the bus: \(error)")
        }
    }

    /// Stops watching and returns what the referee saw.
    public func finish() async throws -> Report {
        child.signal(SIGTERM)
        guard await child.exit(timeout: .seconds(10)) == 0 else {
            child.signal(SIGKILL)
            throw FixtureError("scripts/testbed watch-links did not report")
        }
        let text = try String(contentsOf: output, encoding: .utf8)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw FixtureError("scripts/testbed watch-links reported nothing: \(text)")
        }
        return try JSONDecoder().decode(Report.self, from: Data(line.utf8))
    }

    deinit { child.signal(SIGKILL) }
}
