/// Parameters of `temperature.read`.
public struct TemperatureReadParams: Sendable, Hashable, Codable {
    /// The boards to read.
    public var select: Selection
    /// A held reading at most this old is returned without reading the board again.
    public var maxAgeMs: Int?
    /// Time limit per board in milliseconds.
    public var timeoutMs: Int?

    public init(select: Selection, maxAgeMs: Int? = nil, timeoutMs: Int? = nil) {
        self.select = select
        self.maxAgeMs = maxAgeMs
        self.timeoutMs = timeoutMs
    }
}
