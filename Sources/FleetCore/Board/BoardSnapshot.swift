/// One board as the fleet sees it at one moment.
public struct BoardSnapshot: Sendable, Hashable {
    public var address: BoardAddress
    public var name: String?
    public var alias: String?
    public var phase: BoardPhase
    public var rssi: Int?
    /// What was last asked for the LED.
    public var desiredLED: DesiredLED
    /// The last value successfully written to the LED since the board's last reset, if any.
    public var appliedLED: Bool?
    /// The latest temperature and when it was received.
    public var temperature: SensorReading?
    /// The error of the last failed connect, if any since the last success.
    public var lastFailure: ConnectErrorClass?
    public var lastSeen: ContinuousClock.Instant?
    /// The adapter (`hci0`) of its link, else the one that hears it best, if any.
    public var adapter: String? = nil
    /// The kind of board: its switches and sensors.
    public var profile: BoardProfile = .nano
    /// The latest reading of each of its sensors that has one, by sensor name.
    public var readings: [String: SensorReading] = [:]

    public var identity: BoardIdentity { BoardIdentity(address: address, name: name, alias: alias) }
}
