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

    /// As a whole-degree temperature (the built-in sensor's values are whole already).
    var temperature: TemperatureCache.Entry {
        TemperatureCache.Entry(value: Celsius(degrees: Int(value.rounded(.down))), receivedAt: receivedAt)
    }
}

/// A sensor's reading as a fleet-wide read returns it: the sensor (its unit), the value,
/// and how old it was when that board answered.
public struct SensorValue: Sendable, Hashable {
    public let sensor: BoardProfile.Characteristic
    public let value: Double
    public let age: Duration

    public init(sensor: BoardProfile.Characteristic, value: Double, age: Duration) {
        self.sensor = sensor
        self.value = value
        self.age = age
    }
}
