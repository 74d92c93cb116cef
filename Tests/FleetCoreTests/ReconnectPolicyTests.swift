import Testing

@testable import FleetCore

@Suite struct ReconnectPolicyTests {
    let policy = ReconnectPolicy(
        initialDelay: .seconds(1), outOfResourcesDelay: .seconds(5), multiplier: 2,
        maximumDelay: .seconds(30), minimumDelay: .milliseconds(200), jitter: 0.2, maximumAttempts: 10)

    @Test func transientDelaysGrowExponentiallyUpToTheCap() {
        // random 0.5 = no jitter
        let delays = (1...7).map { policy.decision(after: .transient, attempt: $0, random: 0.5) }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30].map { ReconnectDecision.retry(after: .seconds($0)) })
    }

    @Test func outOfResourcesWaitsLonger() {
        #expect(policy.decision(after: .outOfResources, attempt: 1, random: 0.5) == .retry(after: .seconds(5)))
        #expect(policy.decision(after: .outOfResources, attempt: 2, random: 0.5) == .retry(after: .seconds(10)))
    }

    @Test func jitterStaysWithinItsBandAndTheCap() {
        #expect(policy.decision(after: .transient, attempt: 1, random: 0) == .retry(after: .milliseconds(800)))
        #expect(policy.decision(after: .transient, attempt: 1, random: 0.999_999) == .retry(after: .nanoseconds(1_199_999_600)))
        // At the cap, jitter upwards is clamped; downwards spreads.
        #expect(policy.decision(after: .transient, attempt: 9, random: 1) == .retry(after: .seconds(30)))
        #expect(policy.decision(after: .transient, attempt: 9, random: 0) == .retry(after: .seconds(24)))
    }

    @Test func neverBelowTheFloor() {
        let tiny = ReconnectPolicy(initialDelay: .milliseconds(1), minimumDelay: .milliseconds(200), jitter: 1)
        for attempt in 1...3 {
            guard case .retry(let delay) = tiny.decision(after: .transient, attempt: attempt, random: 0) else {
                Issue.record("expected a retry")
                continue
            }
            #expect(delay >= .milliseconds(200))
        }
    }

    @Test func absentAndPermanentDoNotRetry() {
        #expect(policy.decision(after: .absent, attempt: 1, random: 0.5) == .waitForAdvertisement)
        #expect(policy.decision(after: .permanent, attempt: 1, random: 0.5) == .giveUp)
    }

    @Test func tooManyFailuresMeanAbsent() {
        #expect(policy.decision(after: .transient, attempt: 9, random: 0.5) != .waitForAdvertisement)
        #expect(policy.decision(after: .transient, attempt: 10, random: 0.5) == .waitForAdvertisement)
    }

    @Test func backoffIsDeterministicWithASeedAndResets() {
        func run() -> [ReconnectDecision] {
            var backoff = ReconnectBackoff(policy: policy, random: SeededRandomNumberGenerator(seed: 42))
            return (0..<5).map { _ in backoff.next(after: .transient) }
        }
        let first = run()
        #expect(first == run())
        // Jitter actually varies the delays (not all at the jitter-free value).
        #expect(first != (1...5).map { policy.decision(after: .transient, attempt: $0, random: 0.5) })

        var backoff = ReconnectBackoff(policy: policy, random: SeededRandomNumberGenerator(seed: 1))
        _ = backoff.next(after: .transient)
        _ = backoff.next(after: .transient)
        #expect(backoff.attempts == 2)
        backoff.reset()
        #expect(backoff.attempts == 0)
        guard case .retry(let delay) = backoff.next(after: .transient) else {
            Issue.record("expected a retry")
            return
        }
        #expect(delay >= .milliseconds(800) && delay <= .milliseconds(1200))
    }

    @Test func errorClassesMapToCodes() {
        #expect(ConnectErrorClass.transient.errorCode == .timeout)
        #expect(ConnectErrorClass.outOfResources.errorCode == .busy)
        #expect(ConnectErrorClass.absent.errorCode == .absent)
        #expect(ConnectErrorClass.permanent.errorCode == .failed)
    }
}
