/// One board in `boards.list` and `boards.scan` results.
public struct BoardInfo: Sendable, Hashable, Codable {
    /// Bluetooth address, the board's identity (`AA:BB:CC:DD:EE:FF`).
    public var address: String
    /// Advertised name (not unique).
    public var name: String
    /// The alias set with `boards.alias`, if any.
    public var alias: String?
    /// `ready` when the board can be used now.
    public var state: BoardState
    /// Last received signal strength in dBm, if known.
    public var rssi: Int?
    /// The LED state last asked for (re-applied whenever the board comes back); nil if never set.
    public var led: Bool?
    /// The latest temperature, if any.
    public var temperature: TemperatureReading?
    /// When the board was last seen, ISO 8601 UTC (`2024-05-01T12:00:00Z`), if ever.
    public var lastSeen: String?

    public init(
        address: String, name: String, alias: String? = nil, state: BoardState, rssi: Int? = nil,
        led: Bool? = nil, temperature: TemperatureReading? = nil, lastSeen: String? = nil
    ) {
        self.address = address
        self.name = name
        self.alias = alias
        self.state = state
        self.rssi = rssi
        self.led = led
        self.temperature = temperature
        self.lastSeen = lastSeen
    }
}
