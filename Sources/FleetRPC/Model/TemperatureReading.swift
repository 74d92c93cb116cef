/// A temperature the daemon holds for a board.
public struct TemperatureReading: Sendable, Hashable, Codable {
    /// Whole degrees Celsius, signed (the board sends one two's-complement byte).
    public var celsius: Int
    /// How old the reading is, in milliseconds, when the reply was made.
    public var ageMs: Int

    public init(celsius: Int, ageMs: Int) {
        self.celsius = celsius
        self.ageMs = ageMs
    }
}
