/// A board's temperature as a fleet-wide read returns it: the value, and how old it was
/// when that board answered (not when the whole fan-out ended: one slow board must not
/// age the others' fresh readings).
public struct TemperatureReading: Sendable, Hashable {
    public let value: Celsius
    /// Age of the reading at the moment the board's answer came (0 for a fresh read; the
    /// cache's age for a cached one).
    public let age: Duration

    public init(value: Celsius, age: Duration) {
        self.value = value
        self.age = age
    }
}
