/// The payload of a fleet-wide LED command over MQTT (`<prefix>/all/led/set`,
/// `<prefix>/<gateway>/all/led/set`). Each gateway answers once on
/// `<prefix>/<gateway>/result/<request>` with a `FleetResult<BoardOutcome>`, as `led.set`.
public struct FleetLEDCommand: Sendable, Hashable, Codable {
    public var on: Bool
    /// Names the answer's topic: 1–128 bytes, no `/`, `+` or `#`.
    public var request: String
    /// Each board's deadline, as `led.set`'s `timeoutMs`; the gateway's default when absent.
    public var timeoutMs: Int?

    public init(on: Bool, request: String, timeoutMs: Int? = nil) {
        self.on = on
        self.request = request
        self.timeoutMs = timeoutMs
    }

    /// Why the command cannot be carried out, or nil.
    public var problem: String? {
        if !FleetTopics.isValidLevel(request) {
            return "request: \"\(request)\" cannot name a topic (1–128 bytes, no /, + or #)"
        }
        if let timeoutMs, !(1...600_000).contains(timeoutMs) {
            return "timeoutMs: \(timeoutMs) is not from 1 to 600000"
        }
        return nil
    }
}
