public import FleetCore
public import FleetRPC

extension FleetRPC.FleetResult where Entry == FleetRPC.BoardOutcome {
    /// A fleet-wide operation's outcomes as the wire reports them (`led.set`,
    /// `boards.connect`…). `pending` tells which failures leave the change to be applied
    /// when the board is back.
    public init(_ result: FleetCore.FleetResult<Void>, pending: (FleetError) -> Bool = { _ in false }) {
        self.init(results: result.outcomes.map { outcome in
            FleetRPC.BoardOutcome(
                address: outcome.address.rawValue, name: outcome.name ?? "", ok: outcome.succeeded,
                error: outcome.error.map(BoardError.init), latencyMs: Wire.milliseconds(outcome.latency),
                pending: outcome.error.flatMap { pending($0) ? true : nil })
        })
        unmatched = result.unmatched.isEmpty ? nil : result.unmatched.map(\.description)
    }
}
