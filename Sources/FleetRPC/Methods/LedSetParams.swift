/// Parameters of `led.set`.
public struct LedSetParams: Sendable, Hashable, Codable {
    /// The boards to switch.
    public var select: Selection
    /// `true` switches the LED on, `false` off.
    public var on: Bool
    /// Time limit per board in milliseconds (the daemon has a default).
    public var timeoutMs: Int?

    public init(select: Selection, on: Bool, timeoutMs: Int? = nil) {
        self.select = select
        self.on = on
        self.timeoutMs = timeoutMs
    }
}
