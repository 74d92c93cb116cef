/// A board's temperature as a fleet-wide read returns it: the value, and how old it was
/// when that board answered (not when the whole fan-out ended: one slow board must not
/// age the others' fresh readings).
public struct TemperatureReading: Sendable, Hashable {
    public let value: Celsius
    /// Age of the reading at the moment the board's answer came (0 for a fresh read; the
    /// cache's age for a cached one).
    public let age: Duration

    /// The name of the sensor a temperature is (the one `temperature.read` reads, with a
    /// topic of its own on MQTT).
    public static let sensor = "temperature"

    public init(value: Celsius, age: Duration) {
        self.value = value
        self.age = age
    }
}

extension TemperatureReading: Codable {
    enum CodingKeys: String, CodingKey { case celsius, ageMs }

    /// On the wire: `{"celsius": -3, "ageMs": 1200}` (whole degrees, signed).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            value: Celsius(degrees: try container.decode(Int.self, forKey: .celsius)),
            age: .milliseconds(try container.decode(Int.self, forKey: .ageMs)))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value.degrees, forKey: .celsius)
        try container.encode(age.wholeMilliseconds, forKey: .ageMs)
    }
}
