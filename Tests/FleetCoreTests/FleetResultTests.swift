import Testing

@testable import FleetCore

@Suite struct FleetResultTests {
    let a = BoardAddress("02:00:00:00:00:01")!
    let b = BoardAddress("02:00:00:00:00:02")!
    let c = BoardAddress("02:00:00:00:00:03")!

    @Test func totalsAndAccessors() {
        let result = FleetResult<Celsius>(outcomes: [
            BoardOutcome(address: a, name: "nano-01", result: .success(Celsius(degrees: 21)), latency: .milliseconds(40)),
            BoardOutcome(address: b, name: nil, result: .failure(FleetError(.timeout, "No answer within 5 s.")), latency: .seconds(5)),
            BoardOutcome(address: c, name: "nano-03", result: .failure(FleetError(.absent, "Not advertising.")), latency: .milliseconds(1)),
        ])
        #expect(result.succeededCount == 1)
        #expect(result.failedCount == 2)
        #expect(!result.allSucceeded)
        #expect(result.failureCounts == [.timeout: 1, .absent: 1])
        #expect(result.maximumLatency == .seconds(5))
        #expect(result.outcomes[0].value == Celsius(degrees: 21))
        #expect(result.outcomes[0].error == nil)
        #expect(result.outcomes[1].error?.code == .timeout)
        #expect(result.outcomes[1].error?.retryable == true)
        #expect(result.outcomes[1].value == nil)
    }

    @Test func unmatchedSelectorsMeanNotAllSucceeded() {
        let ok = BoardOutcome<Bool>(address: a, name: nil, result: .success(true), latency: .zero)
        #expect(FleetResult(outcomes: [ok]).allSucceeded)
        #expect(!FleetResult(outcomes: [ok], unmatched: [.name("garage")]).allSucceeded)
        #expect(FleetResult<Bool>(outcomes: []).maximumLatency == .zero)
    }
}
