/// What a fleet-wide operation did on one board (`led.set`, `boards.connect`…).
public struct BoardOutcome: Sendable, Hashable, Codable {
    public var address: String
    public var name: String
    public var ok: Bool
    /// Present when `ok` is false.
    public var error: BoardError?
    /// Time the operation took on this board, in milliseconds.
    public var latencyMs: Int

    public init(address: String, name: String, ok: Bool, error: BoardError? = nil, latencyMs: Int) {
        self.address = address
        self.name = name
        self.ok = ok
        self.error = error
        self.latencyMs = latencyMs
    }
}
