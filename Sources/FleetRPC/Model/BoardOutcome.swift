/// What a fleet-wide operation did on one board (`led.set`, `boards.connect`…).
public struct BoardOutcome: Sendable, Hashable, Codable {
    public var address: String
    public var name: String
    public var ok: Bool
    /// Present when `ok` is false.
    public var error: BoardError?
    /// Time the operation took on this board, in milliseconds.
    public var latencyMs: Int
    /// `led.set` on a board that could not be switched now (absent, out of reach): the state
    /// asked for is recorded and written when the board is back. Absent otherwise.
    public var pending: Bool?

    public init(address: String, name: String, ok: Bool, error: BoardError? = nil, latencyMs: Int, pending: Bool? = nil) {
        self.address = address
        self.name = name
        self.ok = ok
        self.error = error
        self.latencyMs = latencyMs
        self.pending = pending
    }
}
