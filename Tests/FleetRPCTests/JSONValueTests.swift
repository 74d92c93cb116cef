import Foundation
import Testing

@testable import FleetRPC
import JSONRPC

/// JSONValue is read and written by Foundation (``JSONCodec``); these check the mapping and
/// the limits a client can rely on.
@Suite struct JSONValueTests {
    @Test func parsesEveryKindAndWritesItBack() throws {
        let text = #"{"a":[1,-2,3.5,1e3,true,false,null],"b":{"c":"d\n\"é😀"},"e":9223372036854775807}"#
        let value = try JSONValue(parsing: text)
        #expect(value["a"] == [.int(1), .int(-2), .double(3.5), .int(1000), true, false, nil])
        #expect(value["b"]?["c"] == .string("d\n\"é😀"))
        #expect(value["e"] == .int(.max))
        let again = try JSONValue(parsing: value.serialized())
        #expect(again == value)
    }

    @Test func integralNumbersAreIntegersOthersDoubles() throws {
        #expect(try JSONValue(parsing: "1") == .int(1))
        #expect(try JSONValue(parsing: "1.0") == .int(1))
        #expect(try JSONValue(parsing: "-0") == .int(0))
        #expect(try JSONValue(parsing: "0.5") == .double(0.5))
        // Beyond Int64 an integer becomes a double rather than an error.
        #expect(try JSONValue(parsing: "9223372036854775808") == .double(9_223_372_036_854_775_808))
    }

    @Test(arguments: ["1e400", "01", "1.", "-", "{\"a\" 1}", "\"abc", "\"\\x\"", "tru", "[] []", ""])
    func refusesInvalidJSON(text: String) {
        #expect(throws: DecodingError.self) { _ = try JSONValue(parsing: text) }
    }

    @Test(arguments: [
        [0x22, 0xFF, 0x22],  // invalid byte
        [0x22, 0xC0, 0xAF, 0x22],  // overlong '/'
        [0x22, 0xE2, 0x82, 0x22],  // truncated sequence
        [0x22, 0x80, 0x22],  // lone continuation byte
    ] as [[UInt8]])
    func refusesMalformedUTF8(bytes: [UInt8]) {
        #expect(throws: DecodingError.self) { _ = try JSONValue(parsing: bytes) }
    }

    @Test func decodesSurrogatePairEscapes() throws {
        #expect(try JSONValue(parsing: #""\ud83d\ude00\u00e9\/""#) == .string("😀é/"))
    }

    @Test func refusesDeepNestingWithoutCrashing() throws {
        let depth = 100_000
        let deepArray = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(throws: DecodingError.self) { _ = try JSONValue(parsing: deepArray) }
        let deepObject = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        #expect(throws: DecodingError.self) { _ = try JSONValue(parsing: deepObject) }
        // Exactly at the documented limit is accepted; one more is not.
        let limit = JSONValue.maximumDepth
        let atLimit = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(try JSONValue(parsing: atLimit).arrayValue != nil)
        let beyond = "[" + atLimit + "]"
        #expect(throws: DecodingError.self) { _ = try JSONValue(parsing: beyond) }
    }

    @Test func escapesControlCharactersWhenWriting() throws {
        let value = JSONValue.string("a\u{01}\t\"\\z/")
        #expect(String(decoding: value.serialized(), as: UTF8.self) == #""a\u0001\t\"\\z/""#)
        #expect(try JSONValue(parsing: value.serialized()) == value)
    }

    @Test func writesObjectsWithSortedKeysAndNonFiniteAsNull() {
        let value: JSONValue = ["b": 1, "a": [.double(.nan), .double(.infinity)], "c": "x"]
        #expect(value.description == #"{"a":[null,null],"b":1,"c":"x"}"#)
    }

    @Test func agreesWithJSONSerialization() throws {
        let value: JSONValue = ["x": [1, 2.25, "s", nil, ["y": false]], "z": .double(1e-7)]
        let object = try JSONSerialization.jsonObject(with: Data(value.serialized()))
        let data = try JSONSerialization.data(withJSONObject: object)
        #expect(try JSONValue(parsing: data) == value)
    }
}
