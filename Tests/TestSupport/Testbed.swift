public import Foundation
import Synchronization
import Testing

/// A running `scripts/testbed` on one ``Lane``: N simulated Nano boards on BlueZoo (a private
/// dbus-daemon and the BlueZ mock with the project's fidelity fixes) or on real bluetoothd in
/// a VM. Integration tests start one per test, in its own run directory, and always stop it
/// (`Testbed.with`).
public final class Testbed: @unchecked Sendable {
    // Safe: every stored property is immutable after init.
    public let runDirectory: URL
    /// The private bus that plays the system bus (`DBUS_SYSTEM_BUS_ADDRESS`).
    public let busAddress: String
    /// The relay of the kernel's Bluetooth management interface behind the bus
    /// (`BLEFLEET_MGMT_SOCKET`): the real lane's VM has one; BlueZoo has no kernel.
    public let managementSocket: String?
    public let boardCount: Int
    public let lane: Lane

    /// One board as `scripts/testbed state` reports it.
    public struct Board: Decodable, Sendable, Equatable {
        public let name: String
        public let address: String
        public let present: Bool
        public let led: Int?
        public let ledWrites: Int
        public let temperature: Int
        public let notifying: Bool
        /// Relative humidity, %RH, of the boards of a testbed started with `--humidity`.
        public let humidity: Double?

        enum CodingKeys: String, CodingKey {
            case name, address, present, led, temperature, notifying, humidity
            case ledWrites = "led_writes"
        }
    }

    struct State: Decodable { let boards: [Board] }

    public static let script = repositoryRoot.appendingPathComponent("scripts/testbed").path

    private init(runDirectory: URL, busAddress: String, managementSocket: String?, boardCount: Int, lane: Lane) {
        self.runDirectory = runDirectory
        self.busAddress = busAddress
        self.managementSocket = managementSocket
        self.boardCount = boardCount
        self.lane = lane
    }

    /// Starts a testbed with `boards` boards; returns once every board is registered.
    public static func start(lane: Lane = .bluezoo, boards: Int = 5, extraArguments: [String] = []) async throws
        -> Testbed
    {
        let dir = try makeTemporaryDirectory(prefix: "blefleet-testbed")
        let output = try await runProcess(
            Self.script,
            ["start", "--boards", String(boards), "--run-dir", dir.path,
             "--owner-pid", String(getpid())] + (try await lane.startArguments()) + extraArguments)
        var address: String?
        var management: String?
        for line in output.split(separator: "\n") {
            func value(of name: String) -> String? {
                let prefix = "export \(name)="
                guard line.hasPrefix(prefix) else { return nil }
                return String(line.dropFirst(prefix.count)).trimmingCharacters(in: CharacterSet(charactersIn: "'\""))
            }
            address = value(of: "DBUS_SYSTEM_BUS_ADDRESS") ?? address
            management = value(of: "BLEFLEET_MGMT_SOCKET") ?? management
        }
        guard let address else {
            _ = try? await runProcess(Self.script, ["stop", "--run-dir", dir.path])
            throw FixtureError("scripts/testbed start printed no DBUS_SYSTEM_BUS_ADDRESS: \(output)")
        }
        return Testbed(
            runDirectory: dir, busAddress: address, managementSocket: management, boardCount: boards, lane: lane)
    }

    /// Runs `body` with a fresh testbed and always stops it afterwards, also when `body` throws.
    ///
    /// On the real lane bluetoothd 5.66 (Debian 12's, Raspberry Pi OS's) now and then dies
    /// under faults; the testbed restarts it, as systemd would, and registers the boards
    /// again. A scenario it died in did not happen as scheduled: when it fails (an error, or
    /// an issue recorded after the crash), it is said in one line with the crash's reason and
    /// the scenario runs again, once, on a fresh testbed. A failure before any crash, or in
    /// the second run, is the test's. What the daemon must do around a crash is tested by the
    /// scenarios that crash bluetoothd on purpose (the testbed's `bluez restart --crash`,
    /// which is not counted as a crash).
    public static func with<T>(
        lane: Lane = .bluezoo, boards: Int = 5, extraArguments: [String] = [], _ body: (Testbed) async throws -> T
    ) async throws -> T {
        guard lane == .real else { return try await once(lane: lane, boards: boards, extraArguments: extraArguments, body) }
        let crashes = BluetoothdCrashes(vmDirectory: try await RealLaneVM.shared.directory())
        let before = crashes.lines().count
        let spoiled = Flag()
        var outcome: Result<T, any Error>?
        await withKnownIssue("bluetoothd crashed during this scenario", isIntermittent: true) {
            do {
                outcome = .success(try await once(lane: lane, boards: boards, extraArguments: extraArguments, body))
            } catch {
                outcome = .failure(error)
            }
        } matching: { _ in
            // An issue recorded once bluetoothd has crashed: the scenario runs again.
            guard crashes.lines().count > before else { return false }
            spoiled.set()
            return true
        }
        let crashed = Array(crashes.lines().dropFirst(before))
        guard let outcome else { throw FixtureError("the scenario ended without an outcome") }
        if crashed.isEmpty { return try outcome.get() }
        if case .success(let value) = outcome, !spoiled.isSet {
            print("testbed: bluetoothd crashed during this scenario (\(crashed.joined(separator: "; "))); it passed all the same")
            return value
        }
        let first: String
        if case .failure(let error) = outcome { first = "\(error)".split(separator: "\n").prefix(3).joined(separator: " / ") }
        else { first = "an expectation failed after the crash" }
        print("""
            testbed: bluetoothd crashed during this scenario (\(crashed.joined(separator: "; "))): its faults did not \
            happen as scheduled, so it runs again, once (the first run: \(first))
            """)
        return try await once(lane: lane, boards: boards, extraArguments: extraArguments, body)
    }

    private static func once<T>(
        lane: Lane, boards: Int, extraArguments: [String], _ body: (Testbed) async throws -> T
    ) async throws -> T {
        let testbed = try await Testbed.start(lane: lane, boards: boards, extraArguments: extraArguments)
        do {
            let result = try await body(testbed)
            await testbed.stop()
            return result
        } catch {
            await testbed.stop()
            throw error
        }
    }

    /// Waits (bounded by the testbed) until bluetoothd runs and the boards are registered with
    /// it: after a crash the real lane restarts it and registers them again. A referee that
    /// found org.bluez gone asks again after this.
    public func waitForBlueZ() async throws {
        try await run(["bluez", "wait"])
    }

    /// Runs a `scripts/testbed` subcommand against this testbed, e.g. `["board", "drop", "nano-02"]`.
    @discardableResult
    public func run(_ arguments: [String]) async throws -> String {
        // Options go after the subcommand words: scripts/testbed accepts --run-dir anywhere.
        try await runProcess(Self.script, arguments + ["--run-dir", runDirectory.path])
    }

    public func state() async throws -> [Board] {
        let json = try await run(["state"])
        return try JSONDecoder().decode(State.self, from: Data(json.utf8)).boards
    }

    public func stop() async {
        _ = try? await runProcess(Self.script, ["stop", "--run-dir", runDirectory.path])
        try? FileManager.default.removeItem(at: runDirectory)
    }
}

/// The crashes of the real lane's bluetoothd since its VM booted, one line each ("TIME
/// bluetoothd (pid N) killed by SIGSEGV; kernel: ..."), as the VM's supervisor of bluetoothd
/// writes them (testbed/blefleet_testbed/real/guest_agent.sh).
struct BluetoothdCrashes: Sendable {
    let file: URL

    init(vmDirectory: String) {
        file = URL(fileURLWithPath: vmDirectory).appendingPathComponent("bluetoothd.crashes")
    }

    func lines() -> [String] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }
}

/// A flag set from any thread (an issue matcher runs where the issue is recorded).
final class Flag: Sendable {
    private let state = Mutex(false)
    func set() { state.withLock { $0 = true } }
    var isSet: Bool { state.withLock { $0 } }
}
