/// One value of a board's sensor, scaled as its profile says, and when it came.
public struct SensorReading: Sendable, Hashable {
    public let value: Double
    public let receivedAt: ContinuousClock.Instant

    public init(value: Double, receivedAt: ContinuousClock.Instant) {
        self.value = value
        self.receivedAt = receivedAt
    }

    /// Age of the reading at `now`.
    public func age(at now: ContinuousClock.Instant) -> Duration { receivedAt.duration(to: now) }

    /// As whole degrees (the built-in temperature sensor's values are whole already).
    public var celsius: Celsius { Celsius(degrees: Int(value.rounded(.down))) }
}
