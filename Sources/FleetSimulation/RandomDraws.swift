/// The draws a schedule makes, from any generator (the simulation's are FleetCore's
/// ``SeededRandomNumberGenerator``: the same seed gives the same classroom on every machine).
extension RandomNumberGenerator {
    /// A duration between `range`'s bounds, to the millisecond.
    mutating func duration(_ range: ClosedRange<Duration>) -> Duration {
        let low = range.lowerBound.milliseconds, high = range.upperBound.milliseconds
        return .milliseconds(Int64.random(in: low...high, using: &self))
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < p
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
