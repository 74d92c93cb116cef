/// Durations on the wire: whole milliseconds (`ageMs`, `latencyMs`).
extension Duration {
    /// Whole milliseconds, truncated.
    public var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
