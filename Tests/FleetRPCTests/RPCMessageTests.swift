import Foundation
import Testing

@testable import FleetRPC
import JSONRPC

@Suite struct RPCMessageTests {
    private func request(_ text: String) throws -> RPCRequest {
        guard case .single(.request(let request)) = RPCIncoming(parsing: Array(text.utf8)) else {
            throw TestFailure("not a valid single request: \(text)")
        }
        return request
    }

    @Test(arguments: [
        ("1", RPCID.int(1)), ("1.0", .int(1)), ("-0", .int(0)), ("1e3", .int(1000)), ("-9223372036854775808", .int(.min)),
        (#""abc""#, .string("abc")), (#""é😀 \u00e9""#, .string("é😀 é")), (#""""#, .string("")), ("null", .null),
    ])
    func repliesWithTheSameIdValue(id: String, value: RPCID) throws {
        let parsed = try request(#"{"jsonrpc":"2.0","method":"m","id":\#(id)}"#)
        #expect(parsed.id == value)
        let reply = RPCResponse(id: try #require(parsed.id), result: true)
        let back = try JSONDecoder().decode(RPCResponse.self, from: Data(reply.serialized()))
        #expect(back.id == value)
    }

    @Test(arguments: ["0.5", "1e-3", "123456789012345678901234567890", "-9223372036854775809"])
    func refusesIdsThatAreNotIntegers(id: String) {
        guard case .single(.invalid(let replyID, let error)) = RPCIncoming(parsing: Array(#"{"jsonrpc":"2.0","method":"m","id":\#(id)}"#.utf8))
        else {
            Issue.record("accepted the id \(id)")
            return
        }
        #expect(replyID == .null)
        #expect(error.code == RPCErrorCode.invalidRequest.rawValue)
        #expect(error.message.contains("\"id\" must be a string, an integer or null"), "message was: \(error.message)")
    }

    @Test func distinguishesAbsentAndNullIds() throws {
        #expect(try request(#"{"jsonrpc":"2.0","method":"m"}"#).isNotification)
        #expect(try request(#"{"jsonrpc":"2.0","method":"m","id":null}"#).id == .null)
        #expect(try request(#"{"jsonrpc":"2.0","method":"m","id":"1"}"#).id != .int(1))
    }

    @Test(arguments: [
        (#"{"jsonrpc":"2.0","method":"m","id":{}}"#, "\"id\" must be a string, an integer or null"),
        (#"{"jsonrpc":"2.0","method":"m","id":[1]}"#, "\"id\" must be"),
        (#"{"jsonrpc":"2.0","method":"m","id":true}"#, "\"id\" must be"),
        (#"{"jsonrpc":"1.0","method":"m","id":1}"#, "\"jsonrpc\" must be the string \"2.0\""),
        (#"{"method":"m","id":1}"#, "\"jsonrpc\""),
        (#"{"jsonrpc":"2.0","id":1}"#, "\"method\" is missing"),
        (#"{"jsonrpc":"2.0","method":5,"id":1}"#, "\"method\" must be a string"),
        (#"{"jsonrpc":"2.0","method":"m","params":"x","id":1}"#, "\"params\" must be an object or an array"),
        (#"{"jsonrpc":"2.0","method":"m","extra":1,"id":1}"#, "unknown member \"extra\""),
    ])
    func refusesInvalidRequests(text: String, reason: String) throws {
        guard case .single(.invalid(_, let error)) = RPCIncoming(parsing: Array(text.utf8)) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(error.code == RPCErrorCode.invalidRequest.rawValue)
        #expect(error.message.contains(reason), "message was: \(error.message)")
    }

    @Test func requestRoundTripsThroughTheCodec() throws {
        let original = RPCRequest(method: "led.set", params: .byName(["select": "all", "on": true]), id: .string("x"))
        let viaCodable = try JSONDecoder().decode(RPCRequest.self, from: JSONEncoder().encode(original))
        #expect(viaCodable == original)
        #expect(try request(String(decoding: original.serialized(), as: UTF8.self)) == original)
        let notification = RPCRequest(method: "n", params: .byPosition([1]), id: nil)
        #expect(try JSONDecoder().decode(RPCRequest.self, from: JSONEncoder().encode(notification)) == notification)
    }

    @Test func responseHasResultXorError() throws {
        let error = RPCResponse(id: .int(3), error: RPCError(.timeout, "Too slow.", data: ["ms": 5]))
        let result = RPCResponse(id: .string("a"), result: ["x": 1])
        for response in [error, result] {
            #expect(try JSONDecoder().decode(RPCResponse.self, from: Data(response.serialized())) == response)
        }
        #expect(throws: (any Error).self) {
            _ = try JSONDecoder().decode(
                RPCResponse.self, from: Data(#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"m"},"id":1}"#.utf8))
        }
        #expect(throws: (any Error).self) {
            _ = try JSONDecoder().decode(RPCResponse.self, from: Data(#"{"jsonrpc":"2.0","id":1}"#.utf8))
        }
    }

    @Test func errorCodesAreStableAndDocumented() {
        #expect(RPCErrorCode.parseError.rawValue == -32700)
        #expect(RPCErrorCode.invalidRequest.rawValue == -32600)
        #expect(RPCErrorCode.methodNotFound.rawValue == -32601)
        #expect(RPCErrorCode.invalidParams.rawValue == -32602)
        #expect(RPCErrorCode.internalError.rawValue == -32603)
        #expect(RPCErrorCode.permissionDenied.rawValue == -32000)
        #expect(RPCErrorCode.frameTooLarge.rawValue == -32010)
        for code in RPCErrorCode.allCases where code.rawValue >= -32099 {
            #expect(code.rawValue <= -32000)
        }
        #expect(Set(RPCErrorCode.allCases.map(\.meaning)).count == RPCErrorCode.allCases.count)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
