import Foundation

/// Where a test's BlueZ comes from. Every end-to-end test that matters to users takes the
/// lane as its argument (`@Test(arguments: Lane.enabled)`), so one test body checks both.
public enum Lane: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A private dbus-daemon and BlueZoo with the project's fidelity fixes: fast.
    case bluezoo
    /// bluetoothd and the kernel's Bluetooth stack in a VM with virtual LE controllers:
    /// what users run.
    case real

    public var description: String { rawValue }

    /// The lanes this run covers: `BLEFLEET_LANES` (comma-separated), both when unset.
    /// `scripts/test` runs the BlueZoo lane in parallel, then the real lane one test at a time.
    public static let enabled: [Lane] = {
        guard let text = ProcessInfo.processInfo.environment["BLEFLEET_LANES"], !text.isEmpty else {
            return Lane.allCases
        }
        let lanes = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let known = lanes.compactMap(Lane.init(rawValue:))
        precondition(
            known.count == lanes.count,
            "BLEFLEET_LANES=\(text): each entry must be one of \(Lane.allCases.map(\.rawValue).joined(separator: ", "))")
        return known
    }()

    /// `scripts/testbed start` arguments that select this lane.
    func startArguments() async throws -> [String] {
        switch self {
        case .bluezoo: []
        case .real: ["--real", "--vm", try await RealLaneVM.shared.directory()]
        }
    }

    /// Scaled for the lane: the real lane's VM runs under software emulation, on a shared
    /// 2-core machine, so timings a test waits for are a few times longer there.
    public func allowing(_ duration: Duration) -> Duration {
        self == .real ? duration * 4 : duration
    }
}

/// The real lane's VM, booted once per test process (or taken from `BLEFLEET_TESTBED_VM`,
/// which `scripts/test` sets so that all its test runs share one boot). It goes away with
/// this process (`--owner-pid`). A VM that cannot boot fails every real-lane test with the
/// reason; nothing is skipped.
public actor RealLaneVM {
    public static let shared = RealLaneVM()
    private var booting: Task<String, any Error>?

    public func directory() async throws -> String {
        if let given = ProcessInfo.processInfo.environment["BLEFLEET_TESTBED_VM"], !given.isEmpty { return given }
        if let booting { return try await booting.value }
        let task = Task<String, any Error> {
            let directory = try makeTemporaryDirectory(prefix: "blefleet-vm")
            _ = try await runProcess(
                Testbed.script, ["vm", "start", "--vm-dir", directory.path, "--owner-pid", String(getpid())])
            return directory.path
        }
        booting = task
        return try await task.value
    }
}
