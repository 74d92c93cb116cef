import Foundation
import Testing

@testable import FleetRPC

@Suite struct SelectionTests {
    private func decode(_ json: String) throws -> Selection {
        try JSONDecoder().decode(Selection.self, from: Data(json.utf8))
    }

    @Test func decodesStringsAndLists() throws {
        #expect(try decode(#""all""#) == .all)
        #expect(try decode(#""lab-*""#) == .patterns(["lab-*"]))
        #expect(try decode(#"["AA:BB:CC:DD:EE:01","nano-07"]"#) == .patterns(["AA:BB:CC:DD:EE:01", "nano-07"]))
        #expect(try decode(#"["x","all"]"#) == .all)
    }

    @Test(arguments: [
        ("5", "found an integer"),
        ("{}", "found an object"),
        ("true", "found a boolean"),
        ("[]", "an empty list selects no board"),
        (#""""#, "an empty string selects no board"),
        ("[1]", "every element of the list must be a string"),
    ])
    func refusesOtherShapesClearly(json: String, reason: String) throws {
        let value = try JSONValue(parsing: json)
        do {
            _ = try Selection(validating: value)
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.description.contains(reason), "message was \(error.description)")
        }
        #expect(throws: DecodingError.self) { _ = try decode(json) }
    }

    @Test func encodesBackToTheSameShape() throws {
        for selection in [Selection.all, .patterns(["a"]), .patterns(["a", "b*"])] {
            #expect(try decode(String(decoding: JSONEncoder().encode(selection), as: UTF8.self)) == selection)
        }
    }

    @Test func matchesAddressesNamesAliasesAndGlobs() {
        let address = "AA:BB:CC:DD:EE:01"
        #expect(Selection.all.matches(address: address, name: "x", alias: nil))
        #expect(Selection("aa:bb:cc:dd:ee:01").matches(address: address, name: "x", alias: nil))
        #expect(!Selection("AA:BB:CC:DD:EE:02").matches(address: address, name: "AA:BB:CC:DD:EE:02", alias: nil))
        #expect(Selection("nano-07").matches(address: address, name: "nano-07", alias: nil))
        #expect(Selection("lab-*").matches(address: address, name: "nano", alias: "lab-3"))
        #expect(Selection("nano-0?").matches(address: address, name: "nano-07", alias: nil))
        #expect(!Selection("nano-0?").matches(address: address, name: "nano-100", alias: nil))
        #expect(Selection("AA:BB:*").matches(address: address, name: "x", alias: nil))
        #expect(Selection.patterns(["q", "*-7"]).matches(address: address, name: "n-7", alias: nil))
        #expect(!Selection("nano").matches(address: address, name: "nano-07", alias: nil))
        #expect(Selection("AA:BB:CC:DD:EE:01").singleAddress == address)
    }
}
