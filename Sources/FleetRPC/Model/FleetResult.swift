/// The result of a fleet-wide call: one entry per selected board, plus totals. The call
/// itself succeeds even when boards fail; each failure is in its entry.
public struct FleetResult<Entry: Sendable & Hashable & Codable>: Sendable, Hashable, Codable {
    public var results: [Entry]
    public var totals: FleetTotals
    /// Selectors of the call that matched no board (absent when every selector matched).
    public var unmatched: [String]?

    public init(results: [Entry], totals: FleetTotals, unmatched: [String]? = nil) {
        self.results = results
        self.totals = totals
        self.unmatched = unmatched
    }
}

extension FleetResult where Entry == BoardOutcome {
    /// A result whose totals are counted from the entries.
    public init(results: [BoardOutcome]) {
        let ok = results.count(where: \.ok)
        self.init(results: results, totals: FleetTotals(ok: ok, failed: results.count - ok))
    }
}

extension FleetResult where Entry == TemperatureOutcome {
    /// A result whose totals are counted from the entries.
    public init(results: [TemperatureOutcome]) {
        let ok = results.count(where: \.ok)
        self.init(results: results, totals: FleetTotals(ok: ok, failed: results.count - ok))
    }
}

extension FleetResult where Entry == GattOutcome {
    /// A result whose totals are counted from the entries.
    public init(results: [GattOutcome]) {
        let ok = results.count(where: \.ok)
        self.init(results: results, totals: FleetTotals(ok: ok, failed: results.count - ok))
    }
}
