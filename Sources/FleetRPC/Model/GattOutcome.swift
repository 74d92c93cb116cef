/// One board's entry in a `gatt.read` or `gatt.write` result.
public struct GattOutcome: Sendable, Hashable, Codable {
    public var address: String
    public var name: String
    public var ok: Bool
    /// The value read, as hex (`gatt.read` only, when `ok`).
    public var value: String?
    /// Present when `ok` is false.
    public var error: BoardError?
    public var latencyMs: Int

    public init(address: String, name: String, ok: Bool, value: String? = nil, error: BoardError? = nil, latencyMs: Int) {
        self.address = address
        self.name = name
        self.ok = ok
        self.value = value
        self.error = error
        self.latencyMs = latencyMs
    }
}
