public import Foundation
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
    /// On the real lane a death of bluetoothd that the scenario did not ask for fails the test
    /// (issue 55: the fleet must not provoke bluetoothd 5.66, which serves the whole machine
    /// on a gateway, into dying): an issue names the test, each crash (its signal, the kernel's
    /// line), bluetoothd's last log lines and its core's backtrace. The VM's supervisor of
    /// bluetoothd writes every death down (testbed/blefleet_testbed/real/guest_agent.sh); one
    /// a scenario causes on purpose is marked as asked for (`bluez segfault`) or not written
    /// (`bluez restart --crash`), so such scenarios are left alone by construction. Tests run
    /// in parallel and share the VM, one testbed at a time (its lease): the record is read
    /// once this test's testbed holds the VM, and again once it is stopped.
    public static func with<T>(
        lane: Lane = .bluezoo, boards: Int = 5, extraArguments: [String] = [], _ body: (Testbed) async throws -> T
    ) async throws -> T {
        let testbed = try await Testbed.start(lane: lane, boards: boards, extraArguments: extraArguments)
        let crashes = lane == .real ? BluetoothdCrashes(vmDirectory: try? await RealLaneVM.shared.directory()) : nil
        let before = crashes?.lines().count ?? 0
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body(testbed))
        } catch {
            outcome = .failure(error)
        }
        await testbed.stop()
        if let crashes { await crashes.recordUnasked(since: before) }
        return try outcome.get()
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
    let vmDirectory: String
    let file: URL

    init?(vmDirectory: String?) {
        guard let vmDirectory else { return nil }
        self.vmDirectory = vmDirectory
        file = URL(fileURLWithPath: vmDirectory).appendingPathComponent("bluetoothd.crashes")
    }

    /// Fails the running test when a crash nobody asked for was written after the first
    /// `before` lines: an issue names the test, each crash, bluetoothd's last lines and its
    /// core's backtrace (`scripts/testbed vm crashes`).
    func recordUnasked(since before: Int) async {
        let died = Self.unasked(Array(lines().dropFirst(before)))
        guard !died.isEmpty else { return }
        let report = (try? await runProcess(
            Testbed.script, ["vm", "crashes", "--vm-dir", vmDirectory, "--since", String(before), "--unasked"]))
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .flatMap { $0.isEmpty ? nil : $0 } ?? died.joined(separator: "\n")
        let test = Test.current.map { "\($0.name) (\($0.sourceLocation.fileName))" } ?? "this scenario"
        Issue.record("bluetoothd died \(died.count) time(s) during \(test) on the real lane, unasked:\n\(report)")
    }

    func lines() -> [String] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    /// The crashes no scenario asked for: `bluez segfault` marks its own "(asked for: ...)".
    static func unasked(_ lines: [String]) -> [String] {
        lines.filter { !$0.contains("(asked for:") }
    }
}
