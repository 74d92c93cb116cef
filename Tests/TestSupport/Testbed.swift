public import Foundation

/// A running `scripts/testbed`: private dbus-daemon, BlueZoo (with the project's fidelity
/// fixes) and N simulated Nano boards. Integration tests start one per test, in its own
/// run directory, and always stop it (`Testbed.with`).
public final class Testbed: @unchecked Sendable {
    // Safe: every stored property is immutable after init.
    public let runDirectory: URL
    /// The private bus that plays the system bus (`DBUS_SYSTEM_BUS_ADDRESS`).
    public let busAddress: String
    public let boardCount: Int

    /// One board as `scripts/testbed state` reports it.
    public struct Board: Decodable, Sendable, Equatable {
        public let name: String
        public let address: String
        public let present: Bool
        public let led: Int?
        public let ledWrites: Int
        public let temperature: Int
        public let notifying: Bool

        enum CodingKeys: String, CodingKey {
            case name, address, present, led, temperature, notifying
            case ledWrites = "led_writes"
        }
    }

    struct State: Decodable { let boards: [Board] }

    static let script = repositoryRoot.appendingPathComponent("scripts/testbed").path

    public init(boards: Int = 5, extraArguments: [String] = []) throws {
        let dir = try makeTemporaryDirectory(prefix: "blefleet-testbed")
        let output = try runCommand(
            Self.script,
            ["start", "--boards", String(boards), "--run-dir", dir.path,
             "--owner-pid", String(getpid())] + extraArguments)
        var address: String?
        for line in output.split(separator: "\n") {
            let prefix = "export DBUS_SYSTEM_BUS_ADDRESS="
            if line.hasPrefix(prefix) {
                address = String(line.dropFirst(prefix.count))
                    .trimmingCharacters(in: CharacterSet(charactersIn: "'\""))
            }
        }
        guard let address else {
            _ = try? runCommand(Self.script, ["stop", "--run-dir", dir.path])
            throw FixtureError("scripts/testbed start printed no DBUS_SYSTEM_BUS_ADDRESS: \(output)")
        }
        self.runDirectory = dir
        self.busAddress = address
        self.boardCount = boards
    }

    /// Runs `body` with a fresh testbed and always stops it afterwards, also when `body` throws.
    public static func with<T>(
        boards: Int = 5, extraArguments: [String] = [], _ body: (Testbed) async throws -> T
    ) async throws -> T {
        let testbed = try Testbed(boards: boards, extraArguments: extraArguments)
        do {
            let result = try await body(testbed)
            testbed.stop()
            return result
        } catch {
            testbed.stop()
            throw error
        }
    }

    /// Runs a `scripts/testbed` subcommand against this testbed, e.g. `["board", "drop", "nano-02"]`.
    @discardableResult
    public func run(_ arguments: [String]) throws -> String {
        // Options go after the subcommand words: scripts/testbed accepts --run-dir anywhere.
        try runCommand(Self.script, arguments + ["--run-dir", runDirectory.path])
    }

    public func state() throws -> [Board] {
        let json = try run(["state"])
        return try JSONDecoder().decode(State.self, from: Data(json.utf8)).boards
    }

    public func stop() {
        _ = try? runCommand(Self.script, ["stop", "--run-dir", runDirectory.path])
        try? FileManager.default.removeItem(at: runDirectory)
    }
}
