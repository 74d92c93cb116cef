/// ANSI colour for terminal output, off unless standard output is a terminal and neither
/// `NO_COLOR` (any value) nor `TERM=dumb` is set.
public struct TextStyle: Sendable, Hashable {
    public var enabled: Bool

    public init(enabled: Bool) {
        self.enabled = enabled
    }

    /// The style for an output stream.
    public static func detect(isTerminal: Bool, environment: [String: String]) -> TextStyle {
        let noColor = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        return TextStyle(enabled: isTerminal && !noColor && environment["TERM"] != "dumb")
    }

    public func good(_ text: String) -> String { paint(text, "32") }
    public func bad(_ text: String) -> String { paint(text, "31") }
    public func warn(_ text: String) -> String { paint(text, "33") }
    public func dim(_ text: String) -> String { paint(text, "2") }
    public func bold(_ text: String) -> String { paint(text, "1") }

    private func paint(_ text: String, _ code: String) -> String {
        enabled && !text.isEmpty ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}
