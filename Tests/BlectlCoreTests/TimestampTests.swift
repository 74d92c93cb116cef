import BlectlCore
import Testing

@Suite struct TimestampTests {
    @Test("ISO 8601 UTC times parse, with fractions and offsets")
    func parse() {
        #expect(Timestamp.parse("1970-01-01T00:00:00Z") == 0)
        #expect(Timestamp.parse("2024-05-01T12:00:00Z") == 1_714_564_800)
        #expect(Timestamp.parse("2024-05-01T12:00:00.250Z") == 1_714_564_800.25)
        #expect(Timestamp.parse("2024-05-01T14:00:00+02:00") == 1_714_564_800)
    }

    @Test("Anything else is nil", arguments: ["", "yesterday", "2024-05-01", "2024-13-01T00:00:00Z", "2024-05-01T12:00:00", "2024-05-01T12:00:00Zjunk"])
    func invalid(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test("Formatting round-trips")
    func format() {
        #expect(Timestamp.iso8601(1_714_564_800) == "2024-05-01T12:00:00Z")
        #expect(Timestamp.parse(Timestamp.iso8601(1_700_000_123)) == 1_700_000_123)
        #expect(Timestamp.clock(1_714_564_800).count == 8)
    }
}
