import BlectlCore
import FleetRPC
import Testing

@Suite struct JSONTextTests {
    let value: JSONValue = [
        "totals": ["ok": 1, "failed": 0], "results": [["name": "nano-\"1\"", "ok": true, "celsius": -5]], "empty": [],
    ]

    @Test("Pretty JSON: sorted keys, two-space indent, parses back to the same value")
    func pretty() throws {
        let text = JSONText.pretty(value)
        #expect(text == """
            {
              "empty": [],
              "results": [
                {
                  "celsius": -5,
                  "name": "nano-\\"1\\"",
                  "ok": true
                }
              ],
              "totals": {
                "failed": 0,
                "ok": 1
              }
            }
            """)
        #expect(try JSONValue(parsing: text) == value)
    }

    @Test("Compact JSON is one line that parses back")
    func compact() throws {
        let text = JSONText.compact(value)
        #expect(!text.contains("\n"))
        #expect(try JSONValue(parsing: text) == value)
    }
}
