/// One board's answer to `sensor.read`.
public struct SensorOutcome: Sendable, Hashable, Codable {
    public var address: String
    public var name: String
    public var ok: Bool
    /// The sensor read.
    public var sensor: String
    /// The value, scaled as the board's profile says; present when `ok` is true.
    public var value: Double?
    /// Its unit (`°C`, `%`), when the profile gives one.
    public var unit: String?
    /// Age of the reading in milliseconds (0 for a fresh read); present when `ok` is true.
    public var ageMs: Int?
    /// Present when `ok` is false.
    public var error: BoardError?
    public var latencyMs: Int

    public init(
        address: String, name: String, ok: Bool, sensor: String, value: Double? = nil, unit: String? = nil,
        ageMs: Int? = nil, error: BoardError? = nil, latencyMs: Int
    ) {
        self.address = address
        self.name = name
        self.ok = ok
        self.sensor = sensor
        self.value = value
        self.unit = unit
        self.ageMs = ageMs
        self.error = error
        self.latencyMs = latencyMs
    }
}

extension FleetResult where Entry == SensorOutcome {
    /// A result whose totals are counted from the entries.
    public init(results: [SensorOutcome]) {
        let ok = results.count(where: \.ok)
        self.init(results: results, totals: FleetTotals(ok: ok, failed: results.count - ok))
    }
}

/// One sensor of a board in `boards.list`: its latest value, if any.
public struct SensorInfo: Sendable, Hashable, Codable {
    /// The latest value, scaled; absent before the first.
    public var value: Double?
    public var unit: String?
    /// Age of the latest value in milliseconds; absent before the first.
    public var ageMs: Int?

    public init(value: Double? = nil, unit: String? = nil, ageMs: Int? = nil) {
        self.value = value
        self.unit = unit
        self.ageMs = ageMs
    }
}
