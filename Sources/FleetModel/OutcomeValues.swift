/// The value of an operation that has none to return (`led.set`, `boards.connect`…): on the
/// wire, an entry has no field of its own beyond the outcome's.
public struct Done: Sendable, Hashable, Codable {
    public init() {}
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws {}
}

/// A sensor's value as a fleet-wide read returns it: the sensor, the value scaled as the
/// board's profile says, its unit, the decimals its scale gives it (absent for a float), and
/// how old it was when that board answered. On the wire:
/// `{"sensor": "pressure", "value": 1001.3, "unit": "hPa", "decimals": 1, "ageMs": 0}`.
public struct SensorValue: Sendable, Hashable, Codable {
    public var sensor: String
    public var value: Double
    public var unit: String?
    public var decimals: Int?
    public var age: Duration

    public init(sensor: String, value: Double, unit: String?, decimals: Int? = nil, age: Duration) {
        self.sensor = sensor
        self.value = value
        self.unit = unit
        self.decimals = decimals
        self.age = age
    }

    enum CodingKeys: String, CodingKey { case sensor, value, unit, decimals, ageMs }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            sensor: try container.decode(String.self, forKey: .sensor), value: try container.decode(Double.self, forKey: .value),
            unit: try container.decodeIfPresent(String.self, forKey: .unit),
            decimals: try container.decodeIfPresent(Int.self, forKey: .decimals),
            age: .milliseconds(try container.decode(Int.self, forKey: .ageMs)))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sensor, forKey: .sensor)
        try container.encode(value, forKey: .value)
        try container.encodeIfPresent(unit, forKey: .unit)
        try container.encodeIfPresent(decimals, forKey: .decimals)
        try container.encode(age.wholeMilliseconds, forKey: .ageMs)
    }
}

/// Bytes a GATT characteristic held. On the wire: `{"value": "0a1b"}` (lowercase hex).
public struct GattBytes: Sendable, Hashable, Codable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    enum CodingKeys: String, CodingKey { case value }

    public init(from decoder: any Decoder) throws {
        bytes = try decoder.container(keyedBy: CodingKeys.self).decode(Hex.self, forKey: .value).wrappedValue
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Hex(wrappedValue: bytes), forKey: .value)
    }
}
