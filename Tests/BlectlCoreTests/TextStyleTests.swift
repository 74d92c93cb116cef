import BlectlCore
import Testing

@Suite struct TextStyleTests {
    @Test("Colour only on a terminal, and never with NO_COLOR or TERM=dumb")
    func detect() {
        #expect(TextStyle.detect(isTerminal: true, environment: ["TERM": "xterm"]).enabled)
        #expect(!TextStyle.detect(isTerminal: false, environment: ["TERM": "xterm"]).enabled)
        #expect(!TextStyle.detect(isTerminal: true, environment: ["TERM": "xterm", "NO_COLOR": "1"]).enabled)
        #expect(!TextStyle.detect(isTerminal: true, environment: ["TERM": "dumb"]).enabled)
        #expect(TextStyle.detect(isTerminal: true, environment: ["NO_COLOR": ""]).enabled)
    }

    @Test("Disabled style leaves text alone")
    func plain() {
        #expect(TextStyle(enabled: false).bad("failed") == "failed")
        #expect(TextStyle(enabled: true).bad("failed") == "\u{1B}[31mfailed\u{1B}[0m")
    }
}
