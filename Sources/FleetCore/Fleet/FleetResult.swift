/// The results of one fleet command: one ``BoardOutcome`` per selected board, plus the
/// selectors that matched nothing.
public struct FleetResult<Value: Sendable>: Sendable {
    /// One outcome per board, in selection order.
    public let outcomes: [BoardOutcome<Value>]
    /// Selectors that matched no board.
    public let unmatched: [Selection.Selector]

    public init(outcomes: [BoardOutcome<Value>], unmatched: [Selection.Selector] = []) {
        self.outcomes = outcomes
        self.unmatched = unmatched
    }

    /// Boards that succeeded.
    public var succeededCount: Int { outcomes.count(where: \.succeeded) }
    /// Boards that failed.
    public var failedCount: Int { outcomes.count - succeededCount }
    /// Whether every selected board succeeded and every selector matched.
    public var allSucceeded: Bool { failedCount == 0 && unmatched.isEmpty }
    /// Failures by code, for summaries ("3 timeout, 1 absent").
    public var failureCounts: [FleetErrorCode: Int] {
        outcomes.reduce(into: [:]) { counts, outcome in
            if let code = outcome.error?.code { counts[code, default: 0] += 1 }
        }
    }
    /// The slowest board's latency (zero when empty).
    public var maximumLatency: Duration { outcomes.map(\.latency).max() ?? .zero }
}

extension FleetResult: Equatable where Value: Equatable {}
