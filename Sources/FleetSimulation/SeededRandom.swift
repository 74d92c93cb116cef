/// A seeded source of randomness (SplitMix64, Steele, Lea and Flood 2014): the same seed
/// gives the same numbers on every machine, so a schedule replays from its seed. The
/// standard library's generator cannot be seeded.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A duration between `range`'s bounds, to the millisecond.
    public mutating func duration(_ range: ClosedRange<Duration>) -> Duration {
        let low = range.lowerBound.milliseconds, high = range.upperBound.milliseconds
        return .milliseconds(Int64.random(in: low...high, using: &self))
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool {
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
