import Synchronization
import TestSupport
import Testing

/// bluetoothd 5.66 (Debian 12's, Raspberry Pi OS's) dies now and then under faults; on a
/// gateway systemd restarts it (the package's drop-in for bluetooth.service), and so does the
/// real lane's testbed. A real-lane scenario it died in did not happen as scheduled: it runs
/// again, once, and says so; a failure without a crash is the test's.
@Suite(.serialized, .timeLimit(.minutes(6)))
struct BluetoothdCrashTests {
    final class Runs: Sendable {
        private let count = Mutex(0)
        func next() -> Int { count.withLock { $0 += 1; return $0 } }
        var value: Int { count.withLock { $0 } }
    }

    @Test(arguments: RadioFaultTests.lanes(realOnly: true))
    func aScenarioThatBluetoothdCrashedInRunsAgainOnceOnAFreshTestbed(lane: Lane) async throws {
        let runs = Runs()
        try await Testbed.with(lane: lane, boards: 2) { testbed in
            let run = runs.next()
            let state = try await testbed.state()
            #expect(state.count == 2 && state.allSatisfy(\.present), "\(state)")
            if run == 1 {
                // bluetoothd dies unasked; the fault this scenario counted on never happens.
                try await testbed.run(["bluez", "segfault"])
                throw FixtureError("the scheduled fault did not happen")
            }
        }
        #expect(runs.value == 2)
    }

    @Test(arguments: RadioFaultTests.lanes(realOnly: true))
    func aScenarioThatFailsWithoutACrashFailsAndRunsOnce(lane: Lane) async throws {
        let runs = Runs()
        await withKnownIssue("the scenario's own failure") {
            try await Testbed.with(lane: lane, boards: 1) { _ in
                _ = runs.next()
                throw FixtureError("the daemon did something wrong")
            }
        }
        #expect(runs.value == 1)
    }
}
