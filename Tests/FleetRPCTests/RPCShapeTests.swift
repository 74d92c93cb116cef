import Testing

@testable import FleetRPC
import JSONRPC

/// What a developer adding a method meets: the shape of their types is read as they wrote
/// it, and a description that disagrees with them is refused, naming what is wrong.
@Suite struct RPCShapeTests {
    struct Reading: Codable {
        var sensor: String
        var values: [Double]
        var where_: Place?
        var byBoard: [String: Place]
        var places: [Place]
        var phase: BoardPhase?

        enum CodingKeys: String, CodingKey { case sensor, values, where_ = "where", byBoard, places, phase }
    }

    struct Place: Codable {
        var address: BoardAddress
        var rssi: Int?
    }

    @Test func nestedTypesListsAndMapsAreReadDownToTheirLeaves() throws {
        let schema = try RPCShape.schema(of: Reading.self)
        let place: JSONValue = [
            "type": "object", "required": ["address"],
            "properties": ["address": RPCValueType.address.jsonSchema, "rssi": ["type": "integer"]],
        ]
        #expect(schema["required"] == ["sensor", "values", "byBoard", "places"])
        #expect(schema["properties"]?["values"] == ["type": "array", "items": ["type": "number"]])
        #expect(schema["properties"]?["where"] == place, "named as on the wire")
        #expect(schema["properties"]?["byBoard"] == ["type": "object", "additionalProperties": place])
        #expect(schema["properties"]?["places"] == ["type": "array", "items": place])
        #expect(schema["properties"]?["phase"]?["enum"] == .array(BoardPhase.allCases.map { .string($0.rawValue) }))
    }

    /// A field written as null when nil: required, and null allowed (an enum's too).
    struct Always: Codable {
        var state: BoardPhase?
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(state, forKey: .state)
        }
    }

    @Test func aFieldWrittenAsNullIsRequiredAndNullable() throws {
        let schema = try RPCShape.schema(of: Always.self)
        #expect(schema["required"] == ["state"])
        #expect(schema["properties"]?["state"]?["type"] == ["string", "null"])
        #expect(schema["properties"]?["state"]?["enum"]?.arrayValue?.last == .null)
    }

    /// A type that codes itself as one value, and says nothing of its shape.
    struct Celsius: Codable {
        var degrees: Int
        init(from decoder: any Decoder) throws { degrees = try decoder.singleValueContainer().decode(Int.self) }
        func encode(to encoder: any Encoder) throws {}
    }

    struct Odd: Codable { var inside: Celsius }

    @Test func aTypeWhoseShapeCannotBeReadIsNamedWithWhatToDo() {
        #expect {
            try RPCShape.schema(of: Odd.self)
        } throws: { error in
            "\(error)".contains("inside") && "\(error)".contains("RPCValue")
        }
    }

    struct Params: Codable {
        var select: Selection?
        var address: BoardAddress?
        var count: Int
    }

    @Test func parametersAreTheFieldsInOrderWithTheirNotes() throws {
        let notes: [String: RPCParamNote] = [
            "select": "The boards.", "address": "One board.", "count": RPCParamNote("How many.", .integer(minimum: 1)),
        ]
        let params = try RPCShape.parameters(of: Params.self, notes: notes, exactlyOneOf: [["select", "address"]])
        #expect(params.map(\.name) == ["select", "address", "count"])
        #expect(params.map(\.required) == [false, false, true])
        #expect(params.map(\.type) == [.selection, .address, .integer(minimum: 1)])
    }

    @Test(arguments: [
        (["select": "a", "address": "b"], [[String]](), "count has no note"),
        (["select": "a", "address": "b", "count": "c", "limit": "d"], [], "the note on limit is for no field"),
        (["select": "a", "address": "b", "count": "c"], [["select", "adress"]], "exactlyOneOf names adress"),
        (["select": "a", "address": "b", "count": "c"], [["select", "count"]], "count is required"),
    ] as [([String: RPCParamNote], [[String]], String)])
    func aDescriptionThatDisagreesWithItsParamsIsRefused(notes: [String: RPCParamNote], exactlyOneOf: [[String]], says: String) {
        #expect {
            try RPCShape.parameters(of: Params.self, notes: notes, exactlyOneOf: exactlyOneOf)
        } throws: { error in
            "\(error)".contains(says)
        }
    }
}
