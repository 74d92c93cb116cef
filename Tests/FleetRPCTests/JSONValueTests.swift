import Foundation
import Testing

@testable import FleetRPC

@Suite struct JSONValueTests {
    @Test func parsesEveryKindAndWritesItBack() throws {
        let text = #"{"a":[1,-2,3.5,1e3,true,false,null],"b":{"c":"d\n\"é😀"},"e":9223372036854775807}"#
        let value = try JSONValue(parsing: text)
        #expect(value["a"] == [.int(1), .int(-2), .double(3.5), .double(1000), true, false, nil])
        #expect(value["b"]?["c"] == .string("d\n\"é😀"))
        #expect(value["e"] == .int(.max))
        let again = try JSONValue(parsing: value.serialized())
        #expect(again == value)
    }

    @Test func keepsIntegersAndDoublesApart() throws {
        #expect(try JSONValue(parsing: "1") == .int(1))
        #expect(try JSONValue(parsing: "1.0") == .double(1))
        #expect(try JSONValue(parsing: "-0") == .int(0))
        // Beyond Int64 an integer becomes a double rather than an error.
        #expect(try JSONValue(parsing: "9223372036854775808") == .double(9_223_372_036_854_775_808))
    }

    @Test(arguments: [
        ("1e400", "out of range"),
        ("-1e400", "out of range"),
        ("01", "leading zero"),
        ("1.", "digit after '.'"),
        ("-", "digit after '-'"),
        ("1e", "exponent"),
        ("[1,]", "expected a value"),
        ("{\"a\":1,}", "member name"),
        ("{\"a\" 1}", "expected ':'"),
        ("\"abc", "unterminated string"),
        ("\"a\u{01}b\"", "control character"),
        ("\"\\x\"", "invalid escape"),
        ("\"\\ud800\"", "unpaired high surrogate"),
        ("\"\\udc00\"", "unpaired low surrogate"),
        ("tru", "expected true"),
        ("[] []", "after the end"),
        ("{\"a\":1,\"a\":2}", "duplicate member name \"a\""),
        ("", "unexpected end of input"),
    ])
    func refusesInvalidJSONWithAClearReason(text: String, reason: String) {
        #expect {
            _ = try JSONValue(parsing: text)
        } throws: { error in
            (error as? JSONParseError)?.reason.contains(reason) == true
        }
    }

    @Test(arguments: [
        [0x22, 0xFF, 0x22],  // invalid byte
        [0x22, 0xC0, 0xAF, 0x22],  // overlong '/'
        [0x22, 0xED, 0xA0, 0x80, 0x22],  // UTF-8 encoded surrogate
        [0x22, 0xE2, 0x82, 0x22],  // truncated sequence
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
        [0x22, 0x80, 0x22],  // lone continuation byte
    ] as [[UInt8]])
    func refusesMalformedUTF8(bytes: [UInt8]) {
        #expect {
            _ = try JSONValue(parsing: bytes)
        } throws: { error in
            (error as? JSONParseError)?.reason.contains("malformed UTF-8") == true
        }
    }

    @Test func decodesSurrogatePairEscapes() throws {
        #expect(try JSONValue(parsing: #""\ud83d\ude00\u00e9\/""#) == .string("😀é/"))
    }

    @Test func refusesDeepNestingWithoutCrashing() throws {
        let depth = 100_000
        let deepArray = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect {
            _ = try JSONValue(parsing: deepArray)
        } throws: { error in
            (error as? JSONParseError)?.reason.contains("deeper than the limit of 64") == true
        }
        let deepObject = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        #expect(throws: JSONParseError.self) { _ = try JSONValue(parsing: deepObject) }
        // Exactly at the limit is accepted.
        let atLimit = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try JSONValue(parsing: atLimit).arrayValue != nil)
    }

    @Test func escapesControlCharactersWhenWriting() throws {
        let value = JSONValue.string("a\u{01}\t\"\\z")
        #expect(String(decoding: value.serialized(), as: UTF8.self) == #""a\u0001\t\"\\z""#)
        #expect(try JSONValue(parsing: value.serialized()) == value)
    }

    @Test func agreesWithFoundationOnOurOutput() throws {
        let value: JSONValue = ["x": [1, 2.25, "s", nil, ["y": false]], "z": .double(1e-7)]
        let object = try JSONSerialization.jsonObject(with: Data(value.serialized()))
        let data = try JSONSerialization.data(withJSONObject: object)
        #expect(try JSONValue(parsing: data) == value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(value.serialized())) == value)
    }
}
