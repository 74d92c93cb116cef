import Logging
import ServiceLifecycle
import Systemd
import TestSupport
import Testing

/// The watchdog service for real: the probe reads WATCHDOG_USEC through `sd_watchdog_enabled`,
/// runs `WatchdogService` for a while, cancels it, and the test counts `WATCHDOG=1` datagrams.
@Suite struct WatchdogServiceTests {
    /// What the probe's `watchdog` run sent.
    struct Run {
        let output: ProcessOutput
        let pingsBeforeCancel: Int
        let pingsAfterCancel: Int
        let sawCancelled: Bool
    }

    func runProbe(_ environment: [String: String], milliseconds: Int, unhealthy: Bool = false) async throws -> Run {
        let socket = try NotifySocket()
        var arguments = ["watchdog", String(milliseconds)]
        if unhealthy { arguments.append("unhealthy") }
        let output = try await Probe.run(
            arguments, environment: Probe.environment(environment.merging(["NOTIFY_SOCKET": socket.path]) { $1 }))
        let messages = socket.drain()
        let cancelled = messages.firstIndex(of: "STATUS=cancelled")
        let before = messages[..<(cancelled ?? messages.endIndex)]
        let after = cancelled.map { messages[$0...] } ?? []
        return Run(
            output: output,
            pingsBeforeCancel: before.filter { $0 == "WATCHDOG=1" }.count,
            pingsAfterCancel: after.filter { $0 == "WATCHDOG=1" }.count,
            sawCancelled: cancelled != nil && messages.last == "STATUS=exiting")
    }

    @Test func pingsAtHalfTheIntervalUntilCancelled() async throws {
        // WATCHDOG_USEC = 200 ms → one ping every 100 ms; run 1.5 s.
        let run = try await runProbe(["WATCHDOG_USEC": "200000"], milliseconds: 1500)
        #expect(run.output.status == 0, "\(run.output.stdout)\(run.output.stderr)")
        #expect(run.output.value("timeout") == "0.2 seconds interval=0.1 seconds")
        #expect(run.sawCancelled)
        // One ping at start, then one per 100 ms of the time the service really ran (≈ 16).
        // Pinging at the full interval would give about half; a loaded machine loses a few
        // pings, never that many.
        let elapsed = try #require(run.output.value("elapsed.ms").flatMap(Int.init))
        let expected = elapsed / 100 + 1
        let atFullInterval = elapsed / 200 + 1
        let lowest = max(expected * 7 / 10, atFullInterval + 2)
        #expect((lowest...(expected + 1)).contains(run.pingsBeforeCancel), "\(run.pingsBeforeCancel) pings in \(elapsed) ms")
        // 300 ms after cancellation (3 intervals) nothing more arrived.
        #expect(run.pingsAfterCancel == 0)
    }

    @Test func watchdogOfAnotherProcessIsIgnored() async throws {
        // WATCHDOG_PID naming another process means the watchdog is not ours.
        let run = try await runProbe(["WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"], milliseconds: 400)
        #expect(run.output.status == 0, "\(run.output.stdout)\(run.output.stderr)")
        #expect(run.output.value("watchdog") == "none")
        #expect(run.sawCancelled)
        #expect(run.pingsBeforeCancel == 0)
    }

    @Test func disabledWatchdogSendsNothingAndStopsWhenCancelled() async throws {
        let run = try await runProbe([:], milliseconds: 400)
        #expect(run.output.status == 0, "\(run.output.stdout)\(run.output.stderr)")
        #expect(run.output.value("watchdog") == "none")
        #expect(run.sawCancelled)
        #expect(run.pingsBeforeCancel == 0)
    }

    @Test func unhealthyServiceIsNotPinged() async throws {
        let run = try await runProbe(["WATCHDOG_USEC": "200000"], milliseconds: 500, unhealthy: true)
        #expect(run.output.status == 0, "\(run.output.stdout)\(run.output.stderr)")
        #expect(run.output.value("timeout") == "0.2 seconds interval=0.1 seconds")
        #expect(run.sawCancelled)
        #expect(run.pingsBeforeCancel == 0)
        // Logged once, not once per interval.
        let warnings = run.output.stderr.split(separator: "\n").filter {
            $0.contains("warning systemd-probe probe: Health check failed; not pinging the watchdog.")
        }
        #expect(warnings.count == 1, "\(run.output.stderr)")
    }

    @Test func invalidWatchdogEnvironmentIsAClearError() async throws {
        let run = try await runProbe(["WATCHDOG_USEC": "soon"], milliseconds: 100)
        #expect(run.output.status == 1)
        #expect(
            run.output.value("error")
                == "The watchdog settings passed by the service manager (WATCHDOG_USEC, WATCHDOG_PID) are invalid: Invalid argument (errno 22)."
        )
    }

    @Test func pingIntervalIsHalfTheTimeout() {
        #expect(Watchdog(timeout: .seconds(30)).pingInterval == .seconds(15))
        #expect(Watchdog(timeout: .milliseconds(200)).pingInterval == .milliseconds(100))
    }
}

/// `WatchdogService` inside a `ServiceGroup`: it must leave on graceful shutdown, or the
/// daemon would never finish stopping.
///
/// A service that never ends on graceful shutdown hangs its group: the suite's time limit
/// fails it (no race against a timer, which a loaded machine can lose).
@Suite(.timeLimit(.minutes(1))) struct WatchdogServiceLifecycleTests {
    /// Runs `service` in a group, triggers graceful shutdown once `ready` returns, and says
    /// how the group ended: nil when it ended cleanly, else its error (a service that ended
    /// by itself, or failed). A group that never ends fails the suite's time limit.
    func groupEnding(
        _ service: WatchdogService<ContinuousClock>, after ready: @escaping @Sendable () async -> Void
    ) async -> String? {
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: service)], logger: Logger(label: "test")))
        async let ran: Void = group.run()
        await ready()
        await group.triggerGracefulShutdown()
        do {
            try await ran
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func runningWatchdogEndsOnGracefulShutdown() async throws {
        // Unhealthy, so the test process sends nothing anywhere; the checks prove the loop runs.
        let checks = AsyncStream<Void>.makeStream()
        let service = WatchdogService(
            watchdog: Watchdog(timeout: .milliseconds(40)), logger: Logger(label: "test"),
            isHealthy: {
                checks.continuation.yield()
                return false
            })
        let ending = await groupEnding(service) {
            var count = 0
            for await _ in checks.stream {
                count += 1
                if count == 3 { break }
            }
        }
        #expect(ending == nil)
    }

    @Test func disabledWatchdogEndsOnGracefulShutdown() async throws {
        let service = WatchdogService(watchdog: nil, logger: Logger(label: "test"))
        #expect(await groupEnding(service) {} == nil)
    }
}
