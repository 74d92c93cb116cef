import FleetRPC
import JSONRPC
import FleetRPCServer
import Foundation
import Testing

@Suite struct JSONRPCDispatcherTests {
    let dispatcher = TestCatalogue.makeDispatcher()

    /// Sends `frame` as root and returns the reply parsed (nil when none).
    func reply(_ frame: String, uid: UInt32 = 0) async throws -> JSONValue? {
        let (connection, _) = makeConnection(uid: uid)
        guard let bytes = await dispatcher.handle(frame: Array(frame.utf8), connection: connection) else { return nil }
        return try JSONValue(parsing: bytes)
    }

    func replyText(_ frame: String) async -> String? {
        let (connection, _) = makeConnection()
        return await dispatcher.handle(frame: Array(frame.utf8), connection: connection).map { String(decoding: $0, as: UTF8.self) }
    }

    func errorCode(_ reply: JSONValue?) -> Int64? { reply?["error"]?["code"]?.int64Value }

    /// What answerAtOnce answers now, as text; nil when the frame waits for a task.
    func atOnce(_ frame: String, uid: UInt32 = 0, policy: AccessPolicy? = nil) -> String?? {
        let dispatcher = policy.map { TestCatalogue.makeDispatcher(policy: $0) } ?? self.dispatcher
        let credentials = PeerCredentials(pid: getpid(), uid: uid, gid: uid)
        switch dispatcher.answerAtOnce(RPCIncoming(parsing: Array(frame.utf8)), credentials: credentials) {
        case .waits: return nil
        case .answered(let bytes): return .some(bytes.map { String(decoding: $0, as: UTF8.self) })
        }
    }

    // MARK: Answered at once

    @Test func aMethodThatNeverWaitsIsAnsweredAtOnceAndTheOthersWait() async throws {
        #expect(atOnce(#"{"jsonrpc":"2.0","method":"test.snapshot","id":1}"#) == #"{"id":1,"jsonrpc":"2.0","result":false}"#)
        #expect(atOnce(#"{"jsonrpc":"2.0","method":"test.snapshot"}"#) == .some(nil))
        #expect(atOnce(#"{"jsonrpc":"2.0","method":"test.get_data","id":1}"#) == nil)
        #expect(atOnce(#"[{"jsonrpc":"2.0","method":"test.snapshot","id":1}]"#) == nil)
        // Errors need nothing to wait for: the same replies as through handle(frame:).
        for frame in [
            #"{"jsonrpc":"2.0","method":"nope","id":1}"#, #"{"jsonrpc": "2.0", "method": "foobar, "params"#,
            #"{"jsonrpc":"2.0","method":1}"#, #"{"jsonrpc":"2.0","method":"test.snapshot","params":{"x":1},"id":"a"}"#,
            #"{"jsonrpc":"2.0","method":"test.snapshot","params":{"fail":true},"id":2}"#,
        ] {
            #expect(atOnce(frame) == .some(await replyText(frame)), "\(frame)")
        }
    }

    @Test func aCallerWhoseRoleIsNotKnownYetWaits() async throws {
        // Finding a role asks NSS, which may block: never on the event loop.
        let policy = AccessPolicy()
        let frame = #"{"jsonrpc":"2.0","method":"test.snapshot","id":1}"#
        #expect(atOnce(frame, uid: 4242, policy: policy) == nil)
        _ = policy.role(for: PeerCredentials(pid: getpid(), uid: 4242, gid: 4242))
        let refused = try #require(atOnce(frame, uid: 4242, policy: policy) ?? nil)
        #expect(refused.contains("-32000"))
    }

    // MARK: JSON-RPC 2.0 specification, section 7

    @Test func positionalParameters() async throws {
        #expect(try await reply(#"{"jsonrpc": "2.0", "method": "test.subtract", "params": [42, 23], "id": 1}"#)
            == ["jsonrpc": "2.0", "result": 19, "id": 1])
        #expect(try await reply(#"{"jsonrpc": "2.0", "method": "test.subtract", "params": [23, 42], "id": 2}"#)
            == ["jsonrpc": "2.0", "result": -19, "id": 2])
    }

    @Test func namedParameters() async throws {
        #expect(try await reply(#"{"jsonrpc": "2.0", "method": "test.subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#)
            == ["jsonrpc": "2.0", "result": 19, "id": 3])
        #expect(try await reply(#"{"jsonrpc": "2.0", "method": "test.subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}"#)
            == ["jsonrpc": "2.0", "result": 19, "id": 4])
    }

    @Test func notificationsGetNoReply() async throws {
        #expect(try await reply(#"{"jsonrpc": "2.0", "method": "test.update", "params": [1,2,3,4,5]}"#) == nil)
        #expect(try await reply(#"{"jsonrpc": "2.0", "method": "test.foobar"}"#) == nil)
    }

    @Test func nonExistentMethod() async throws {
        let answer = try await reply(#"{"jsonrpc": "2.0", "method": "test.foobar", "id": "1"}"#)
        #expect(errorCode(answer) == -32601)
        #expect(answer?["id"] == "1")
        #expect(answer?["error"]?["message"]?.stringValue?.contains("\"test.foobar\"") == true)
    }

    @Test func invalidJSON() async throws {
        let answer = try await reply(#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#)
        #expect(errorCode(answer) == -32700)
        #expect(answer?["id"] == .null)
    }

    @Test func invalidRequestObject() async throws {
        let answer = try await reply(#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#)
        #expect(errorCode(answer) == -32600)
        #expect(answer?["id"] == .null)
    }

    @Test func batchWithInvalidJSON() async throws {
        let answer = try await reply(#"[{"jsonrpc": "2.0", "method": "test.sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method""#)
        #expect(errorCode(answer) == -32700)
        #expect(answer?["id"] == .null)
    }

    @Test func emptyBatchIsOneInvalidRequest() async throws {
        let answer = try await reply("[]")
        #expect(answer?.objectValue != nil, "an empty batch is answered by a single object, not an array")
        #expect(errorCode(answer) == -32600)
        #expect(answer?["id"] == .null)
    }

    @Test func batchOfNonObjectsIsArrayOfErrors() async throws {
        let one = try #require(try await reply("[1]")?.arrayValue)
        #expect(one.count == 1 && errorCode(one[0]) == -32600 && one[0]["id"] == .null)
        let three = try #require(try await reply("[1,2,3]")?.arrayValue)
        #expect(three.count == 3)
        #expect(three.allSatisfy { errorCode($0) == -32600 && $0["id"] == .null })
    }

    @Test func mixedBatch() async throws {
        let frame = """
            [
                {"jsonrpc": "2.0", "method": "test.sum", "params": [1,2,4], "id": "1"},
                {"jsonrpc": "2.0", "method": "test.notify_hello", "params": [7]},
                {"jsonrpc": "2.0", "method": "test.subtract", "params": [42,23], "id": "2"},
                {"foo": "boo"},
                {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
                {"jsonrpc": "2.0", "method": "test.get_data", "id": "9"}
            ]
            """
        let answers = try #require(try await reply(frame)?.arrayValue)
        #expect(answers.count == 5)
        #expect(answers.contains(["jsonrpc": "2.0", "result": 7, "id": "1"]))
        #expect(answers.contains(["jsonrpc": "2.0", "result": 19, "id": "2"]))
        #expect(answers.contains { errorCode($0) == -32600 && $0["id"] == .null })
        #expect(answers.contains { errorCode($0) == -32601 && $0["id"] == "5" })
        #expect(answers.contains(["jsonrpc": "2.0", "result": ["hello", 5], "id": "9"]))
    }

    @Test func batchOfNotificationsGetsNoReply() async throws {
        let frame = #"[{"jsonrpc": "2.0", "method": "test.notify_hello", "params": [7]},{"jsonrpc": "2.0", "method": "test.update", "params": [1,2,4]}]"#
        #expect(try await reply(frame) == nil)
    }

    // MARK: Edge cases

    @Test func repliesCarryTheSameIdValue() async throws {
        for (id, echoed) in [("1", "1"), ("1.0", "1"), ("1e3", "1000"), ("-0", "0"), (#""é😀\n""#, #""é😀\n""#), ("null", "null")] {
            let text = await replyText(#"{"jsonrpc":"2.0","method":"test.get_data","id":\#(id)}"#)
            #expect(text?.contains(#""id":\#(echoed),"jsonrpc""#) == true, "reply: \(text ?? "nil")")
        }
        for id in ["1.5", "123456789012345678901234567890"] {
            let answer = try await reply(#"{"jsonrpc":"2.0","method":"test.get_data","id":\#(id)}"#)
            #expect(errorCode(answer) == -32600, "id \(id)")
            #expect(answer?["id"] == .null)
        }
    }

    @Test func malformedUTF8IsAParseError() async throws {
        let (connection, _) = makeConnection()
        var frame = Array(#"{"jsonrpc":"2.0","method":"test.get_data","params":{"a":""#.utf8)
        frame += [0xC3, 0x28]
        frame += Array(#""},"id":1}"#.utf8)
        let answer = try JSONValue(parsing: try #require(await dispatcher.handle(frame: frame, connection: connection)))
        #expect(errorCode(answer) == -32700)
        #expect(answer["id"] == .null)
    }

    @Test func deepNestingIsRefusedNotACrash() async throws {
        let depth = 100_000
        let answer = try await reply(String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
        #expect(errorCode(answer) == -32700)
        let params = String(repeating: "[", count: JSONValue.maximumDepth) + String(repeating: "]", count: JSONValue.maximumDepth)
        let inParams = try await reply(#"{"jsonrpc":"2.0","method":"test.update","params":[\#(params)],"id":1}"#)
        #expect(errorCode(inParams) == -32700)
    }

    @Test func outOfRangeNumbersAndDuplicateKeys() async throws {
        #expect(errorCode(try await reply(#"{"jsonrpc":"2.0","method":"test.sum","params":[1e999],"id":1}"#)) == -32700)
        let huge = try await reply(#"{"jsonrpc":"2.0","method":"test.sum","params":[99999999999999999999],"id":1}"#)
        #expect(errorCode(huge) == -32602)
        #expect(huge?["error"]?["message"]?.stringValue?.contains("\"a\" must be an integer") == true)
        // JSON leaves duplicate member names undefined: one of them is used, and one reply is sent.
        let duplicate = try await reply(#"{"jsonrpc":"2.0","method":"test.sum","id":1,"id":2}"#)
        #expect(duplicate?["result"] == 0)
        #expect(duplicate?["id"] == 1 || duplicate?["id"] == 2)
    }

    @Test func wrongParamTypesNameTheParameter() async throws {
        let answer = try await reply(#"{"jsonrpc":"2.0","method":"test.subtract","params":{"minuend":"42","subtrahend":1},"id":7}"#)
        #expect(errorCode(answer) == -32602)
        #expect(answer?["id"] == 7)
        #expect(answer?["error"]?["message"] == #"Invalid params: "minuend" must be an integer, got a string "42"."#)
        let unknown = try await reply(#"{"jsonrpc":"2.0","method":"test.subtract","params":{"minuend":1,"subtrahend":1,"x":0},"id":8}"#)
        #expect(unknown?["error"]?["message"]?.stringValue?.contains(#"unknown parameter "x""#) == true)
        let missing = try await reply(#"{"jsonrpc":"2.0","method":"test.subtract","params":[1],"id":9}"#)
        #expect(missing?["error"]?["message"]?.stringValue?.contains(#"missing required parameter "subtrahend""#) == true)
        let typed = try await reply(#"{"jsonrpc":"2.0","method":"test.typed","params":{"select":{},"on":true},"id":10}"#)
        #expect(typed?["error"]?["message"]?.stringValue?.contains(#""select": a selection is"#) == true)
    }

    @Test func typedHandlersDecodeParamsAndEncodeResults() async throws {
        let answer = try await reply(#"{"jsonrpc":"2.0","method":"test.typed","params":{"select":["a","b"],"on":true},"id":1}"#)
        #expect(answer?["result"]?["totals"] == ["ok": 1, "failed": 0])
        #expect(answer?["result"]?["results"]?.arrayValue?.first?["ok"] == true)
    }

    @Test func handlerErrorsMapToCodesWithoutLeakingInternals() async throws {
        let internalText = await replyText(#"{"jsonrpc":"2.0","method":"test.fail_internal","id":1}"#)
        let parsed = try JSONValue(parsing: try #require(internalText))
        #expect(errorCode(parsed) == -32603)
        #expect(internalText?.contains("secret") == false)
        #expect(internalText?.contains("SecretFailure") == false)
        let timeout = try await reply(#"{"jsonrpc":"2.0","method":"test.fail_rpc","id":2}"#)
        #expect(errorCode(timeout) == -32003)
        #expect(timeout?["error"]?["message"] == "The board did not answer within 5 s.")
        let convertible = try await reply(#"{"jsonrpc":"2.0","method":"test.fail_convertible","id":3}"#)
        #expect(errorCode(convertible) == -32001)
    }

    @Test func internalErrorsAreLogged() async throws {
        let capture = LogCapture()
        let dispatcher = TestCatalogue.makeDispatcher(logger: capture.logger)
        let (connection, _) = makeConnection()
        _ = await dispatcher.handle(frame: Array(#"{"jsonrpc":"2.0","method":"test.fail_internal","id":1}"#.utf8), connection: connection)
        let record = try #require(capture.all.first { $0.level == .error })
        #expect(record.metadata["error"]?.contains("secret-internal-detail") == true)
        #expect(record.metadata["rpc.method"] == "test.fail_internal")
    }

    @Test func unprivilegedCallersAreRefusedAndLogged() async throws {
        let capture = LogCapture()
        let policy = AccessPolicy(configuration: .init(controlGroup: "no-such-group-xyz", readOnlyGroup: "no-such-ro-xyz"))
        let dispatcher = TestCatalogue.makeDispatcher(policy: policy, logger: capture.logger)
        let (connection, _) = makeConnection(uid: 65534, gid: 65534)
        let bytes = await dispatcher.handle(
            frame: Array(#"{"jsonrpc":"2.0","method":"test.update","id":1}"#.utf8), connection: connection)
        let answer = try JSONValue(parsing: try #require(bytes))
        #expect(errorCode(answer) == -32000)
        #expect(answer["error"]?["message"]?.stringValue?.contains("join the group 'no-such-group-xyz'") == true)
        let record = try #require(capture.all.first { $0.message.contains("Refused") })
        #expect(record.metadata["client.uid"] == "65534")
        #expect(record.metadata["client.pid"] == "\(getpid())")
        #expect(record.metadata["rpc.method"] == "test.update")
    }

    @Test func stateChangingCallsAreLogged() async throws {
        let capture = LogCapture()
        let dispatcher = TestCatalogue.makeDispatcher(logger: capture.logger)
        let (connection, _) = makeConnection()
        _ = await dispatcher.handle(frame: Array(#"{"jsonrpc":"2.0","method":"test.update","id":1}"#.utf8), connection: connection)
        _ = await dispatcher.handle(frame: Array(#"{"jsonrpc":"2.0","method":"test.get_data","id":2}"#.utf8), connection: connection)
        let records = capture.all.filter { $0.message.contains("State-changing") }
        #expect(records.count == 1)
        #expect(records.first?.metadata["rpc.method"] == "test.update")
        #expect(records.first?.metadata["client.uid"] == "0")
    }

    @Test func theUserAClientCallsForIsLoggedWithTheCallAndGrantsNothing() async throws {
        let capture = LogCapture()
        let policy = AccessPolicy(configuration: .init(controlGroup: "no-such-group-xyz", readOnlyGroup: "no-such-ro-xyz"))
        let dispatcher = TestCatalogue.makeDispatcher(logger: capture.logger)
        let (connection, _) = makeConnection()
        _ = await dispatcher.handle(
            frame: Array(#"{"jsonrpc":"2.0","method":"test.update","params":{"_meta":{"user":"teacher\nroot"}},"id":1}"#.utf8),
            connection: connection)
        let record = try #require(capture.all.first { $0.message.contains("State-changing") })
        #expect(record.metadata["client.claimed-user"] == "teacherroot")
        #expect(record.metadata["client.user"] == nil, "a claim is logged as a claim, never as the caller")
        #expect(record.metadata["client.uid"] == "0")
        // Positional params carry no _meta: the call is logged with its uid all the same.
        _ = await dispatcher.handle(
            frame: Array(#"{"jsonrpc":"2.0","method":"test.update","params":[],"id":3}"#.utf8), connection: connection)
        let positional = capture.all.filter { $0.message.contains("State-changing") }
        #expect(positional.count == 2 && positional[1].metadata["client.uid"] == "0", "\(positional.map(\.metadata))")
        #expect(positional.count == 2 && positional[1].metadata["client.claimed-user"] == nil)
        // A stranger who says it calls for someone is still a stranger.
        let refusing = TestCatalogue.makeDispatcher(policy: policy, logger: capture.logger)
        let (stranger, _) = makeConnection(uid: 65534, gid: 65534)
        let bytes = await refusing.handle(
            frame: Array(#"{"jsonrpc":"2.0","method":"test.update","params":{"_meta":{"user":"root"}},"id":2}"#.utf8),
            connection: stranger)
        #expect(errorCode(try JSONValue(parsing: try #require(bytes))) == -32000)
        let refusal = try #require(capture.all.first { $0.message.contains("Refused") })
        #expect(refusal.metadata["client.claimed-user"] == "root")
        #expect(refusal.metadata["client.uid"] == "65534")
    }

    @Test func discoverReturnsTheRegisteredMethods() async throws {
        let answer = try await reply(#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#)
        let document = try #require(answer?["result"])
        #expect(document["openrpc"] == "1.2.6")
        let names = document["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(names == dispatcher.methods.map(\.name).filter { $0 != "rpc.discover" })
        #expect(names?.contains("test.subtract") == true)
        #expect(errorCode(try await reply(#"{"jsonrpc":"2.0","method":"rpc.discover","params":{"x":1},"id":1}"#)) == -32602)
    }

    @Test func refuseAnswersEveryRequestWithAnId() async throws {
        let busy = RPCError(.busy, "Busy.")
        let frame = #"[{"jsonrpc":"2.0","method":"test.get_data","id":1},{"jsonrpc":"2.0","method":"test.get_data"},{"jsonrpc":"2.0","method":"test.get_data","id":"b"}]"#
        let answer = try JSONValue(parsing: try #require(dispatcher.refuse(frame: Array(frame.utf8), with: busy)))
        #expect(answer.arrayValue?.map { $0["id"] } == [1, "b"])
        #expect(answer.arrayValue?.allSatisfy { errorCode($0) == -32004 } == true)
        #expect(dispatcher.refuse(frame: Array(#"{"jsonrpc":"2.0","method":"x"}"#.utf8), with: busy) == nil)
    }
}
