/// One board in `boards.list` and `boards.scan` results.
public struct BoardInfo: Sendable, Hashable, Codable {
    /// Bluetooth address, the board's identity (`AA:BB:CC:DD:EE:FF`).
    public var address: BoardAddress
    /// Advertised name (not unique).
    public var name: String
    /// The alias set with `boards.alias`, if any.
    public var alias: String?
    /// `ready` when the board can be used now.
    public var state: BoardPhase
    /// Last received signal strength in dBm, if known.
    public var rssi: Int?
    /// The LED as last written successfully to the board since it last connected; nil when
    /// nothing was written since (it may have rebooted: its LED is then off).
    public var led: Bool?
    /// The LED state asked for (re-applied whenever the board comes back); nil if never set.
    public var desiredLed: Bool?
    /// The latest temperature, if any.
    public var temperature: TemperatureReading?
    /// When the board was last seen, ISO 8601 UTC (`2024-05-01T12:00:00Z`), if ever.
    public var lastSeen: String?
    /// The adapter (`hci0`) of its link, else the one that hears it best, if any.
    public var adapter: String?
    /// The board's profile (`nano` for the built-in one).
    public var profile: String?
    /// Each sensor of its profile, by name, with its latest value.
    public var sensors: [String: SensorInfo]?

    public init(
        address: BoardAddress, name: String, alias: String? = nil, state: BoardPhase, rssi: Int? = nil,
        led: Bool? = nil, desiredLed: Bool? = nil, temperature: TemperatureReading? = nil, lastSeen: String? = nil,
        adapter: String? = nil, profile: String? = nil, sensors: [String: SensorInfo]? = nil
    ) {
        (self.adapter, self.profile, self.sensors, self.address, self.name, self.alias) = (adapter, profile, sensors, address, name, alias)
        (self.state, self.rssi, self.led, self.desiredLed, self.temperature) = (state, rssi, led, desiredLed, temperature)
        self.lastSeen = lastSeen
    }

    enum CodingKeys: String, CodingKey {
        case address, name, alias, state, rssi, led, desiredLed, temperature, lastSeen, adapter, profile, sensors
    }

    /// `led` and `desiredLed` are always present, `null` when unknown (a script tells
    /// "not known" from "field missing"); the other optional fields are left out when unknown.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(address, forKey: .address)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(alias, forKey: .alias)
        try container.encode(state, forKey: .state)
        try container.encodeIfPresent(rssi, forKey: .rssi)
        try container.encode(led, forKey: .led)
        try container.encode(desiredLed, forKey: .desiredLed)
        try container.encodeIfPresent(temperature, forKey: .temperature)
        try container.encodeIfPresent(lastSeen, forKey: .lastSeen)
        try container.encodeIfPresent(adapter, forKey: .adapter)
        try container.encodeIfPresent(profile, forKey: .profile)
        try container.encodeIfPresent(sensors, forKey: .sensors)
    }
}

/// One sensor of a board in `boards.list`: its latest value, if any.
public struct SensorInfo: Sendable, Hashable, Codable {
    /// The latest value, scaled; absent before the first.
    public var value: Double?
    public var unit: String?
    /// Age of the latest value in milliseconds; absent before the first.
    public var ageMs: Int?
    /// Home Assistant's device class of the sensor (`temperature`, `humidity`…), as its
    /// profile gives it; absent when it gives none.
    public var deviceClass: String?
    /// The decimals its scale gives a value (blefleet-profile(5)); absent for a float.
    public var decimals: Int?

    public init(value: Double? = nil, unit: String? = nil, ageMs: Int? = nil, deviceClass: String? = nil, decimals: Int? = nil) {
        (self.value, self.unit, self.ageMs, self.deviceClass, self.decimals) = (value, unit, ageMs, deviceClass, decimals)
    }
}
