import Foundation
import Testing

@testable import FleetRPC

@Suite struct JSONValueEncoderTests {
    struct Inner: Encodable {
        var list: [Int?]
        var flag: Bool
    }

    struct Outer: Encodable {
        var name: String
        var missing: String?
        var inner: Inner
        var nested: [[String: Double]]
        var small: Int8
        var big: UInt32

        enum CodingKeys: String, CodingKey { case name, missing, inner, nested, small, big, extra }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encodeIfPresent(missing, forKey: .missing)
            try container.encode(inner, forKey: .inner)
            try container.encode(nested, forKey: .nested)
            try container.encode(small, forKey: .small)
            try container.encode(big, forKey: .big)
            var extra = container.nestedContainer(keyedBy: CodingKeys.self, forKey: .extra)
            try extra.encode("deep", forKey: .name)
            var list = extra.nestedUnkeyedContainer(forKey: .nested)
            try list.encode(1)
            try list.encodeNil()
        }
    }

    @Test func nestedContainersOptionalsAndIntegers() throws {
        let value = Outer(
            name: "nano", missing: nil, inner: Inner(list: [1, nil, -3], flag: true), nested: [["t": 21.5]],
            small: -5, big: 4_000_000_000)
        let json = try JSONValueEncoder().encode(value)
        #expect(json == [
            "name": "nano",
            "inner": ["list": [1, nil, -3], "flag": true],
            "nested": [["t": 21.5]],
            "small": -5,
            "big": .int(4_000_000_000),
            "extra": ["name": "deep", "nested": [1, nil]],
        ])
        // The same JSON as JSONEncoder writes.
        #expect(try JSONValue(parsing: JSONEncoder().encode(value)) == json)
    }

    @Test func refusesWhatJSONCannotHold() {
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(["x": Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode([UInt64.max]) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(Double.infinity) }
    }

    @Test func aJSONValueIsItself() throws {
        let value: JSONValue = ["a": [1, "b", nil, 2.5]]
        #expect(try JSONValueEncoder().encode(value) == value)
        #expect(try JSONValueEncoder().encode([value]) == [value])
    }
}
