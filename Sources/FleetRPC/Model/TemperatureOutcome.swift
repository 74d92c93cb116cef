/// One board's entry in a `temperature.read` result.
public struct TemperatureOutcome: Sendable, Hashable, Codable {
    public var address: String
    public var name: String
    public var ok: Bool
    /// Whole degrees Celsius, signed; present when `ok` is true.
    public var celsius: Int?
    /// Age of the reading in milliseconds (0 for a fresh read); present when `ok` is true.
    public var ageMs: Int?
    /// Present when `ok` is false.
    public var error: BoardError?
    public var latencyMs: Int

    public init(
        address: String, name: String, ok: Bool, celsius: Int? = nil, ageMs: Int? = nil, error: BoardError? = nil,
        latencyMs: Int
    ) {
        self.address = address
        self.name = name
        self.ok = ok
        self.celsius = celsius
        self.ageMs = ageMs
        self.error = error
        self.latencyMs = latencyMs
    }
}
