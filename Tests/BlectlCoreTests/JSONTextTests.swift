import BlectlCore
import FleetRPC
import JSONRPC
import Testing

@Suite struct JSONTextTests {
    let value: JSONValue = [
        "totals": ["ok": 1, "failed": 0], "results": [["name": "nano-\"1\"", "ok": true, "celsius": -5]], "empty": [],
    ]

    @Test("Pretty JSON: sorted keys, two-space indent, parses back to the same value")
    func pretty() throws {
        let text = JSONText.pretty(value)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "{" && lines.last == "}")
        #expect(lines[1].hasPrefix("  \"empty\""), "keys sorted, two spaces: \(lines[1])")
        #expect(lines.contains { $0.hasPrefix("      \"celsius\"") }, "nested three levels deep: six spaces")
        let keys = lines.filter { $0.hasPrefix("  \"") }.map { $0.dropFirst(3).prefix { $0 != "\"" } }
        #expect(keys == ["empty", "results", "totals"])
        #expect(try JSONValue(parsing: text) == value)
    }

    @Test("Compact JSON is one line that parses back")
    func compact() throws {
        let text = JSONText.compact(value)
        #expect(!text.contains("\n"))
        #expect(try JSONValue(parsing: text) == value)
    }
}
