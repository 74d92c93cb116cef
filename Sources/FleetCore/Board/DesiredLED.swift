/// The LED state the user asked for; re-applied when a board reconnects. The board cannot
/// report its LED, so `unknown` means nobody has set it since the board was adopted.
public enum DesiredLED: String, Sendable, Hashable, CaseIterable, Codable {
    case on
    case off
    case unknown
}
