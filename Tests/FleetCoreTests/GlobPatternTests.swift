import Testing

@testable import FleetCore

@Suite struct GlobPatternTests {
    @Test(arguments: [
        ("nano-*", "nano-07", true),
        ("nano-*", "nano-", true),
        ("nano-*", "xnano-07", false),
        ("nano-0?", "nano-07", true),
        ("nano-0?", "nano-007", false),
        ("nano-[0-2]7", "nano-17", true),
        ("nano-[0-2]7", "nano-37", false),
        ("nano-[!0-2]7", "nano-37", true),
        ("nano-[^0-2]7", "nano-17", false),
        ("*", "", true),
        ("a*b*c", "aXXbYYc", true),
        ("a*b*c", "aXXbYY", false),
        ("*-07", "nano-07", true),
        ("\\*", "*", true),
        ("\\*", "x", false),
        ("[]]", "]", true),
        ("**x", "abx", true),
    ])
    func matches(_ pattern: String, _ text: String, _ expected: Bool) throws {
        #expect(try GlobPattern(pattern).matches(text) == expected)
    }

    @Test func caseInsensitiveForAddresses() throws {
        let pattern = try GlobPattern("c0:98:*")
        #expect(pattern.matches("C0:98:E5:49:00:01", caseInsensitive: true))
        #expect(!pattern.matches("C0:98:E5:49:00:01"))
    }

    @Test func unclosedSetIsAClearError() {
        #expect(throws: FleetError(.invalidArgument, "The pattern \"nano-[0-2\" has a '[' without a closing ']'.")) {
            try GlobPattern("nano-[0-2")
        }
    }

    @Test func longPatternsDoNotBlowUp() throws {
        let text = String(repeating: "a", count: 2000)
        let pattern = try GlobPattern(String(repeating: "*a", count: 50) + "b")
        #expect(!pattern.matches(text))
    }
}
