import TestSupport
import Testing

/// bluetoothd 5.66 (Debian 12's, Raspberry Pi OS's) serves the whole gateway: the fleet must
/// not provoke it into dying (issue 55). On the real lane every death of it is written down by
/// its supervisor in the VM, and `Testbed.with` fails a scenario that bluetoothd died in
/// unasked, naming the test, the crash and its backtrace. These tests prove that the check
/// can fail, and that a crash a scenario causes on purpose is no failure.
@Suite(.serialized, .timeLimit(.minutes(6)))
struct BluetoothdCrashTests {
    @Test(arguments: RadioFaultTests.lanes(realOnly: true))
    func aBluetoothdDeathNobodyAskedForFailsTheScenarioNamingTheCrash(lane: Lane) async throws {
        await withKnownIssue("bluetoothd died unasked during the scenario") {
            do {
                try await Testbed.with(lane: lane, boards: 1) { testbed in
                    // As if bluetoothd segfaulted by itself: the mark "asked for" is left off.
                    try await testbed.run(["bluez", "segfault", "--unasked"])
                    try await testbed.waitForBlueZ()
                    #expect(try await testbed.state().allSatisfy(\.present))
                }
            } catch {
                Issue.record(error)  // not the issue looked for: fails the test
            }
        } matching: { (issue: Issue) -> Bool in
            let text = issue.comments.map(\.rawValue).joined(separator: "\n")
            return text.contains("bluetoothd died 1 time(s) during aBluetoothdDeathNobodyAskedForFailsTheScenarioNamingTheCrash")
                && text.contains("killed by SIGSEGV") && text.contains("backtrace: #0")
        }
    }

    @Test(arguments: RadioFaultTests.lanes(realOnly: true))
    func aBluetoothdDeathTheScenarioAskedForIsNoFailure(lane: Lane) async throws {
        try await Testbed.with(lane: lane, boards: 1) { testbed in
            try await testbed.run(["bluez", "segfault"])
            try await testbed.run(["bluez", "restart", "--crash"])
            try await testbed.waitForBlueZ()
            #expect(try await testbed.state().allSatisfy(\.present))
        }
    }
}
