import Foundation
import Testing

@testable import FleetRPC
import JSONRPC

/// A selection on the wire, read once by the method's descriptor into the fleet's own
/// ``Selection`` (the one the daemon's core matches boards with).
@Suite struct SelectionTests {
    private func decode(_ json: String) throws -> Selection {
        try JSONDecoder().decode(Selection.self, from: Data(json.utf8))
    }

    /// `led.set`'s params checked as the dispatcher does, then read by its Params.
    private func checked(select json: String) throws(RPCError) -> Selection {
        let value = (try? JSONValue(parsing: json)) ?? .null
        let params = try FleetMethods.LedSet.descriptor.validate(.byName(["select": value, "on": true]))
        return try FleetMethods.LedSet.Params(checked: params).select
    }

    @Test func decodesStringsAndLists() throws {
        #expect(try decode(#""all""#) == .all)
        #expect(try decode(#""lab-*""#) == Selection(parsing: ["lab-*"]))
        #expect(try decode(#"["aa:bb:cc:dd:ee:01","nano-07"]"#).selectors == [.address(BoardAddress("AA:BB:CC:DD:EE:01")!), .name("nano-07")])
        #expect(try checked(select: #"["nano-0?", "kitchen"]"#) == Selection(parsing: ["nano-0?", "kitchen"]))
        #expect(try checked(select: #""all""#) == .all)
    }

    @Test(arguments: [
        ("5", "found an integer"),
        ("{}", "found an object"),
        ("true", "found a boolean"),
        ("[]", "an empty list selects no board"),
        (#""""#, "An empty board selector matches nothing"),
        ("[1]", "every element of the list must be a string"),
        (#""lab-[12""#, "has a '[' without a closing ']'"),
    ])
    func refusesOtherShapesClearly(json: String, reason: String) throws {
        do {
            _ = try checked(select: json)
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.code == RPCErrorCode.invalidParams.rawValue)
            #expect(error.message.contains("\"select\": ") && error.message.contains(reason), "message was \(error.message)")
        }
        if json != "[1]" && json != "5" && json != "{}" && json != "true" {
            #expect(throws: DecodingError.self) { _ = try decode(json) }
        }
    }

    @Test func encodesBackToTheSameShape() throws {
        for texts in [["all"], ["a"], ["a", "b*"], ["AA:BB:CC:DD:EE:01", "[ab]*"]] {
            let selection = try Selection(parsing: texts)
            let json = try JSONValue(parsing: JSONEncoder().encode(selection))
            #expect(json == (texts.count == 1 ? .string(texts[0]) : .array(texts.map(JSONValue.string))))
            #expect(try decode(String(decoding: JSONEncoder().encode(selection), as: UTF8.self)) == selection)
        }
    }
}
