import FleetRPC
import JSONRPC
import FleetRPCServer
import Foundation
import Testing

/// A read-only method added as the catalogue's are: one description (its name, its sentence,
/// what each parameter is for, its params and its result as Swift types) and a handler.
/// The checks a call meets, what `rpc.discover` publishes and what the client decodes all
/// come from that one description.
@Suite struct OneDescriptionTests {
    enum BoardsCount: RPCMethod {
        static let descriptor = describe(
            "boards.count", "How many of the selected boards there are, by state.",
            params: [
                "select": "Only these boards (default all).", "state": "Only boards in this state.",
                "atMost": RPCParamNote("Stop counting here.", .integer(minimum: 1, maximum: 100)),
            ],
            result: RPCResultDescriptor("count", "The count."), access: .read, errors: [.permissionDenied])

        struct Params: RPCMethodParams {
            var select: Selection?
            var state: BoardPhase?
            var atMost: Int?
        }

        struct Result: Codable, Sendable {
            var count: Int
            var names: [String]
            /// Written as null when there is none (as `led` of a board is).
            var first: BoardAddress?
            /// Left out when there is none.
            var note: String?

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(count, forKey: .count)
                try container.encode(names, forKey: .names)
                try container.encode(first, forKey: .first)
                try container.encodeIfPresent(note, forKey: .note)
            }
        }
    }

    let dispatcher: JSONRPCDispatcher = {
        var dispatcher = JSONRPCDispatcher(policy: AccessPolicy(), logger: .silent)
        dispatcher.registerDiscovery(FleetMethods.Discover.self, title: "test", version: BlefleetVersion.current)
        dispatcher.register(BoardsCount.self) { params, _ in
            BoardsCount.Result(count: min(params.atMost ?? 3, 3), names: ["\(params.select ?? .all)", params.state?.rawValue ?? "any"])
        }
        return dispatcher
    }()

    func reply(_ params: String) async throws -> JSONValue {
        let frame = #"{"jsonrpc":"2.0","method":"boards.count","id":1,"params":\#(params)}"#
        return try JSONValue(parsing: try #require(await dispatcher.handle(frame: Array(frame.utf8), connection: makeConnection().0)))
    }

    @Test func theParametersAreTheParamsFieldsInOrderOfTheirTypes() {
        let params = BoardsCount.descriptor.params
        #expect(params.map(\.name) == ["select", "state", "atMost"])
        #expect(params.map(\.required) == [false, false, false])
        #expect(params.map(\.type) == [.selection, .string(allowed: BoardPhase.allCases.map(\.rawValue)), .integer(minimum: 1, maximum: 100)])
        #expect(params.map(\.description) == ["Only these boards (default all).", "Only boards in this state.", "Stop counting here."])
    }

    @Test func aCallIsCheckedAgainstThemBeforeTheHandlerRuns() async throws {
        let unknownState = try await reply(#"{"state":"flying"}"#)
        #expect(unknownState["error"]?["code"] == -32602)
        let stateMessage = unknownState["error"]?["message"]?.stringValue ?? ""
        #expect(stateMessage.contains("\"state\" must be one of ") && stateMessage.contains("\"ready\""), "\(stateMessage)")
        let outOfRange = try await reply(#"{"atMost":0}"#)
        #expect(outOfRange["error"]?["message"]?.stringValue?.contains("\"atMost\" must be an integer from 1 to 100") == true)
        let unknownName = try await reply(#"{"limit":2}"#)
        #expect(unknownName["error"]?["message"]?.stringValue?.contains("unknown parameter \"limit\"; boards.count takes select, state, atMost") == true)
        let byPosition = try await reply(#"["lab-*", "ready", 2]"#)
        #expect(byPosition["result"] == ["count": 2, "names": ["lab-*", "ready"], "first": nil])
    }

    @Test func discoverPublishesTheParametersAndTheResultsShape() async throws {
        let frame = #"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#
        let answer = try JSONValue(parsing: try #require(await dispatcher.handle(frame: Array(frame.utf8), connection: makeConnection().0)))
        let method = try #require(answer["result"]?["methods"]?.arrayValue?.first { $0["name"] == "boards.count" })
        #expect(method["x-access"] == "read")
        #expect(method["params"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["select", "state", "atMost"])
        #expect(method["params"]?.arrayValue?[2]["schema"] == ["type": "integer", "minimum": 1, "maximum": 100])
        let schema = try #require(method["result"]?["schema"])
        // What the type requires, and what it writes as null rather than leaving out.
        #expect(schema["required"] == ["count", "names", "first"])
        #expect(schema["properties"]?["count"] == ["type": "integer"])
        #expect(schema["properties"]?["names"] == ["type": "array", "items": ["type": "string"]])
        #expect(schema["properties"]?["first"]?["type"] == ["string", "null"])
        #expect(schema["properties"]?["note"] == ["type": "string"])
    }
}
