/// The results of one fleet-wide call: one ``BoardOutcome`` per selected board, plus the
/// selectors that matched nothing. The call itself succeeds even when boards fail; each
/// failure is in its entry.
///
/// On the wire: `{"results": [outcome…], "totals": {"ok", "failed"}, "unmatched"?: [selector…]}`.
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

    /// The same result with every value transformed.
    public func map<Other: Sendable>(_ transform: (Value) -> Other) -> FleetResult<Other> {
        FleetResult<Other>(outcomes: outcomes.map { $0.map(transform) }, unmatched: unmatched)
    }
}

extension FleetResult: Equatable where Value: Equatable {}

extension FleetResult: Codable where Value: Codable {
    enum CodingKeys: String, CodingKey { case results, totals, unmatched }

    /// How many boards succeeded and failed, as the wire gives them beside the results.
    struct Totals: Codable {
        var ok: Int
        var failed: Int
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let unmatched = try container.decodeIfPresent([String].self, forKey: .unmatched) ?? []
        self.init(
            outcomes: try container.decode([BoardOutcome<Value>].self, forKey: .results),
            unmatched: unmatched.map { (try? Selection.Selector(parsing: $0)) ?? .name($0) })
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(outcomes, forKey: .results)
        try container.encode(Totals(ok: succeededCount, failed: failedCount), forKey: .totals)
        if !unmatched.isEmpty { try container.encode(unmatched.map(\.description), forKey: .unmatched) }
    }
}
