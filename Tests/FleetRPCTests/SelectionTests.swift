import Foundation
import Testing

@testable import FleetRPC
import JSONRPC

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

    @Test func singleAddressIsNormalized() {
        let address = "AA:BB:CC:DD:EE:01"
        #expect(Selection("AA:BB:CC:DD:EE:01").singleAddress == address)
    }
}
