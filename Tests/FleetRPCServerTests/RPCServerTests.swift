import FleetRPC
import JSONRPC
import FleetRPCServer
import Foundation
import Glibc
import NIOConcurrencyHelpers
import Testing
import TestSupport

extension SocketTests {
    @Suite struct RPCServerTests {
        let gate = Gate()

        @Test func answersCallsOverTheSocketWithTheirIds() async throws {
            try await withServer(dispatcher: TestCatalogue.makeServerDispatcher(gate: gate)) { path, _ in
                let lines = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    // Two frames in one write, then one split across two writes.
                    try client.send(
                        #"{"jsonrpc":"2.0","method":"test.subtract","params":[42,23],"id":1.0}"# + "\n"
                            + #"{"jsonrpc":"2.0","method":"test.notify_hello","params":[1]}"# + "\r\n"
                            + #"{"jsonrpc":"2.0","method":"rpc.discover","id":"d"}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_"#)
                    try client.send("data\",\"id\":\"split\"}\n")
                    return try (0..<3).map { _ in try client.readLine() }
                }
                // One compact line each, members in key order.
                #expect(lines.contains(#"{"id":1,"jsonrpc":"2.0","result":19}"#))
                #expect(lines.contains(#"{"id":"split","jsonrpc":"2.0","result":["hello",5]}"#))
                let discover = try #require(try lines.map(parse).first { $0["id"] == "d" })
                #expect(discover["result"]?["methods"]?.arrayValue?.contains { $0["name"] == "test.wait" } == true)
            }
        }

        @Test func answersATruncatedFrameAtEndOfInputThenCloses() async throws {
            try await withServer(dispatcher: TestCatalogue.makeServerDispatcher(gate: gate)) { path, _ in
                let lines = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":1}"# + "\n" + #"{"jsonrpc":"2.0","met"#)
                    client.shutdownWrite()
                    return try client.readToEnd()
                }
                // Both answered (in any order, as JSON-RPC allows), then the connection closed.
                #expect(lines.count == 2)
                let replies = try lines.map(parse)
                #expect(replies.contains { $0["id"] == 1 && $0["result"] == ["hello", 5] })
                #expect(replies.contains { $0["id"] == .null && $0["error"]?["code"] == -32700 })
            }
        }

        @Test func malformedUTF8GetsAParseErrorAndTheConnectionStaysUsable() async throws {
            try await withServer(dispatcher: TestCatalogue.makeServerDispatcher(gate: gate)) { path, _ in
                let lines = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    try client.send(Array(#"{"jsonrpc":"2.0","method":"test.get_data","id":"\#u{7F}"#.utf8) + [0xFF, 0xFE] + Array("\"}\n".utf8))
                    let first = try client.readLine()
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":2}"# + "\n")
                    return [first, try client.readLine()]
                }
                #expect(try parse(lines[0])["error"]?["code"] == -32700)
                #expect(try parse(lines[1])["result"] == ["hello", 5])
            }
        }

        @Test(arguments: [false, true])
        func oversizedFrameIsAnsweredThenTheConnectionCloses(withNewline: Bool) async throws {
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate), configure: { $0.maxFrameBytes = 1024 }
            ) { path, server in
                let lines = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    let padding = String(repeating: "x", count: 4000)
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","params":{"a":"\#(padding)"},"id":1}"# + (withNewline ? "\n" : ""))
                    return try client.readToEnd()
                }
                #expect(lines.count == 1)
                let error = try parse(lines.first)
                #expect(error["error"]?["code"] == -32010)
                #expect(error["error"]?["message"]?.stringValue?.contains("at most 1024 bytes") == true)
                #expect(error["id"] == .null)
                try await eventually("the server dropped the connection") { server.connectionCount == 0 }
            }
        }

        @Test func aFrameOfExactlyTheLimitIsReadOneByteMoreIsNot() async throws {
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate), configure: { $0.maxFrameBytes = 1024 }
            ) { path, _ in
                @Sendable func frame(length: Int) -> String {
                    let head = #"{"jsonrpc":"2.0","method":"test.get_data","id":"#
                    let id = "\"" + String(repeating: "x", count: length - head.count - 3) + "\""
                    return head + id + "}"
                }
                #expect(frame(length: 1024).utf8.count == 1024)
                let lines = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    try client.send(frame(length: 1024) + "\r\n")
                    let first = try client.readLine()
                    try client.send(frame(length: 1025) + "\n")
                    return [first] + (try client.readToEnd())
                }
                #expect(try parse(lines[0])["result"] == ["hello", 5])
                #expect(try parse(lines[1])["error"]?["code"] == -32010)
            }
        }

        @Test func concurrentCallsOnOneConnectionAreAnsweredInAnyOrder() async throws {
            try await withServer(dispatcher: TestCatalogue.makeServerDispatcher(gate: gate)) { path, _ in
                let lines = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    // test.wait only returns once test.open ran: serial handling would never answer.
                    try client.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"k"},"id":1}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.open","params":{"key":"k"},"id":2}"# + "\n")
                    return [try client.readLine(), try client.readLine()]
                }
                #expect(try lines.map { try parse($0)["id"] }.sorted { "\($0!)" < "\($1!)" } == [1, 2])
                #expect(try lines.map(parse).first { $0["id"] == 1 }?["result"] == "k")
            }
        }

        @Test func callsBeyondTheInFlightLimitAreRefusedAsBusy() async throws {
            let gate = self.gate
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate),
                configure: { $0.maxCallsInFlightPerConnection = 2 }
            ) { path, _ in
                let client = try UnixSocketClient(path: path)
                let busy = try await offPool {
                    try client.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"a"},"id":1}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"b"},"id":2}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":3}"# + "\n")
                    return try client.readLine()
                }
                let refusal = try parse(busy)
                #expect(refusal["id"] == 3)
                #expect(refusal["error"]?["code"] == -32004)
                gate.open("a")
                gate.open("b")
                let rest = try await offPool { [try client.readLine(), try client.readLine()] }
                #expect(Set(try rest.map { try parse($0)["result"] }) == ["a", "b"])
            }
        }

        /// A call that never waits (daemon.status) is answered on the event loop as it is read:
        /// also while the connection's every call place is taken, where a waiting call is
        /// refused as busy. Its errors and refusals are answered the same way.
        @Test func callsThatNeverWaitAreAnsweredOnTheEventLoopEvenWhenTheConnectionIsBusy() async throws {
            let gate = self.gate
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate),
                configure: { $0.maxCallsInFlightPerConnection = 1 }
            ) { path, _ in
                let client = try UnixSocketClient(path: path)
                let replies = try await offPool {
                    try client.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"k"},"id":1}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":2}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.snapshot","id":3}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.snapshot","params":{"fail":true},"id":4}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.snapshot","params":{"fail":"yes"},"id":5}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.snapshot"}"# + "\n")
                    return try (0..<4).map { _ in try parse(try client.readLine()) }
                }
                let byID = Dictionary(uniqueKeysWithValues: replies.map { ($0["id"]!.int64Value!, $0) })
                #expect(byID[2]?["error"]?["code"] == -32004)
                #expect(byID[3]?["result"] == true)
                #expect(byID[4]?["error"]?["code"] == -32001)
                #expect(byID[5]?["error"]?["code"] == -32602)
                gate.open("k")
                let last = try await offPool { try parse(try client.readLine()) }
                #expect(last["id"] == 1)
                #expect(last["result"] == "k")
            }
        }

        @Test func callsDoNotWaitBehindRunningCalls() async throws {
            let gate = self.gate
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate),
                configure: { $0.maxCallsInFlightPerConnection = 5 }
            ) { path, _ in
                let client = try UnixSocketClient(path: path)
                let replies = try await offPool {
                    try client.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"x"},"id":1}"# + "\n")
                    try client.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"y"},"id":2}"# + "\n")
                    // Two calls are waiting; the next ones are answered all the same, and a
                    // batch too (with an unknown method among them), and they open the waits.
                    try client.send(#"{"jsonrpc":"2.0","method":"test.open","params":{"key":"x"},"id":3}"# + "\n")
                    try client.send(
                        #"[{"jsonrpc":"2.0","method":"test.open","params":{"key":"y"},"id":4},{"jsonrpc":"2.0","method":"nope","id":5}]"#
                            + "\n")
                    return try (0..<4).map { _ in try client.readLine() }
                }
                let parsed = try replies.map(parse)
                let single = parsed.compactMap { reply -> JSONValue? in
                    if case .object = reply { return reply }
                    return nil
                }
                #expect(single.contains { $0["id"] == 3 && $0["result"] == true })
                #expect(single.contains { $0["id"] == 1 && $0["result"] == "x" })
                #expect(single.contains { $0["id"] == 2 && $0["result"] == "y" })
                let batch = try #require(parsed.first { if case .array = $0 { true } else { false } })
                guard case .array(let entries) = batch, entries.count == 2 else {
                    Issue.record("batch reply: \(batch)")
                    return
                }
                #expect(entries[0] == ["jsonrpc": "2.0", "result": true, "id": 4])
                #expect(entries[1]["id"] == 5 && entries[1]["error"]?["code"] == -32601)
            }
        }

        /// A batch's items are calls: each takes a place of the connection's, those past its
        /// limit are answered busy, and while they run the connection has no place left.
        @Test func aBatchsItemsCountAsCallsAndThoseBeyondTheLimitAreBusy() async throws {
            let gate = self.gate
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate),
                configure: { $0.maxCallsInFlightPerConnection = 3 }
            ) { path, server in
                let client = try UnixSocketClient(path: path)
                try client.send(
                    "[" + ["a", "b", "c", "d", "e"].enumerated().map { index, key in
                        #"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"\#(key)"},"id":\#(index + 1)}"#
                    }.joined(separator: ",") + "]\n")
                try await eventually("three items run") { gate.waiting("a") && gate.waiting("b") && gate.waiting("c") }
                #expect(server.callsInFlight == 3)
                let busy = try await offPool {
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":9}"# + "\n")
                    return try parse(try client.readLine())
                }
                #expect(busy["id"] == 9)
                #expect(busy["error"]?["code"] == -32004)
                #expect(!gate.waiting("d") && !gate.waiting("e"))
                for key in ["a", "b", "c"] { gate.open(key) }
                let batch = try await offPool { try parse(try client.readLine()) }
                guard case .array(let replies) = batch, replies.count == 5 else {
                    Issue.record("batch reply: \(batch)")
                    return
                }
                #expect(replies[0...2].map { $0["result"] } == ["a", "b", "c"])
                for reply in replies[3...] {
                    #expect(reply["error"]?["code"] == -32004)
                    #expect(reply["error"]?["message"]?.stringValue?.contains("already has 3 calls in flight (max-calls-per-client)") == true)
                }
                try await eventually("the batch's places are free") { server.callsInFlight == 0 }
            }
        }

        @Test func aBatchLongerThanTheLimitIsRefusedWholeAndTheConnectionGoesOn() async throws {
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate), configure: { $0.maxBatchCalls = 4 }
            ) { path, _ in
                let lines = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    let item = #"{"jsonrpc":"2.0","method":"test.get_data","id":1}"#
                    try client.send("[" + Array(repeating: item, count: 5).joined(separator: ",") + "]\n")
                    let refused = try client.readLine()
                    try client.send("[" + Array(repeating: item, count: 4).joined(separator: ",") + "]\n")
                    return [refused, try client.readLine()]
                }
                let refused = try parse(lines[0])
                #expect(refused["id"] == .null)
                #expect(refused["error"]?["code"] == -32600)
                #expect(
                    refused["error"]?["message"]
                        == "Invalid request: a batch may hold at most 4 calls (max-batch-calls) and this one holds 5; nothing of it was run, send it in parts.")
                guard case .array(let replies) = try parse(lines[1]) else { throw TestFailure("not a batch reply: \(lines[1] ?? "")") }
                #expect(replies.count == 4 && replies.allSatisfy { $0["result"] == ["hello", 5] })
            }
        }

        /// A connection that holds nothing and stays silent is closed after the idle timeout;
        /// one that holds something (a subscription) is not, however long it is silent.
        @Test func anIdleConnectionThatHoldsNothingIsClosed() async throws {
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate), configure: { $0.idleTimeout = .milliseconds(300) }
            ) { path, server in
                let holder = try UnixSocketClient(path: path)
                let held = try await offPool {
                    try holder.send(#"{"jsonrpc":"2.0","method":"test.hold","id":1}"# + "\n")
                    return try parse(try holder.readLine())
                }
                #expect(held["result"] == true)
                let idle = try UnixSocketClient(path: path)
                let lines = try await offPool {
                    try idle.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":2}"# + "\n")
                    return try idle.readToEnd()
                }
                #expect(lines.count == 1)
                #expect(try parse(lines.first)["result"] == ["hello", 5])
                // The holder was silent longer than the idle one, and is still served.
                let again = try await offPool {
                    try holder.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":3}"# + "\n")
                    return try parse(try holder.readLine())
                }
                #expect(again["result"] == ["hello", 5])
                try await eventually("only the holder is open") { server.connectionCount == 1 }
            }
        }

        @Test func aClientThatDoesNotReadIsDisconnected() async throws {
            let flooded = NIOLockedValueBox<Int>(-1)
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate, flooded: flooded),
                configure: { $0.maxQueuedFramesPerConnection = 16 }
            ) { path, server in
                let client = try UnixSocketClient(path: path)
                try client.send(#"{"jsonrpc":"2.0","method":"test.flood","params":{"count":1000000},"id":1}"# + "\n")
                try await eventually("the flood stopped") { flooded.withLockedValue { $0 } >= 0 }
                let sent = flooded.withLockedValue { $0 }
                #expect(sent < 1_000_000, "every notification was queued: the queue is not bounded")
                let lines = try await offPool { try client.readToEnd() }
                #expect(lines.count <= sent)
                #expect(lines.allSatisfy { $0.contains("test.flooded") })
                try await eventually("the server dropped the connection") { server.connectionCount == 0 }
            }
        }

        @Test func answersManyClientsAtOnceWithoutLeakingDescriptors() async throws {
            try await withServer(dispatcher: TestCatalogue.makeServerDispatcher(gate: gate)) { path, server in
                let before = socketCount(boundTo: path)
                let replies = try await offPool {
                    let clients = try (0..<256).map { _ in try UnixSocketClient(path: path) }
                    for (index, client) in clients.enumerated() {
                        try client.send(#"{"jsonrpc":"2.0","method":"test.sum","params":[\#(index),1],"id":\#(index)}"# + "\n")
                    }
                    return try clients.map { try $0.readLine() }
                }
                for (index, line) in replies.enumerated() {
                    let reply = try parse(line)
                    #expect(reply["id"] == .int(Int64(index)))
                    #expect(reply["result"] == .int(Int64(index + 1)))
                }
                try await eventually("every connection closed") { server.connectionCount == 0 }
                try await eventually("sockets went back to \(before)") { socketCount(boundTo: path) == before }
            }
        }

        @Test func shutdownLetsCallsInFlightFinishThenStops() async throws {
            let gate = self.gate
            let directory = try makeTemporaryDirectory(prefix: "blefleet-rpc")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("rpc.sock").path
            let server = RPCServer(
                configuration: RPCServerConfiguration(listener: .path(path), socketGroup: nil, shutdownGracePeriod: .seconds(10)),
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate), logger: .silent)
            try await server.bind()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                let client = try UnixSocketClient(path: path)
                try client.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"s"},"id":1}"# + "\n")
                try await eventually("the call is in flight") { gate.waiting("s") }
                server.triggerGracefulShutdown()
                try await eventually("the socket file is gone or refuses") { (try? UnixSocketClient(path: path)) == nil }
                gate.open("s")
                let lines = try await offPool { try client.readToEnd() }
                #expect(try lines.map(parse) == [["jsonrpc": "2.0", "result": "s", "id": 1]])
                try await group.waitForAll()
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }

        @Test func aBoundServerAnswersNothingUntilItRuns() async throws {
            let directory = try makeTemporaryDirectory(prefix: "blefleet-rpc")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("rpc.sock").path
            let server = RPCServer(
                configuration: RPCServerConfiguration(listener: .path(path), socketGroup: nil),
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate), logger: .silent)
            try await server.bind()
            // The daemon binds early and serves once BlueZ is loaded: a client that connects
            // meanwhile waits (in the listen backlog) rather than being answered too soon.
            let client = try UnixSocketClient(path: path)
            try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":1}"# + "\n")
            let early = try await offPool { try? client.readLine(timeout: .milliseconds(300)) }
            #expect(early == nil, "answered before run(): \(early ?? "")")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                let reply = try await offPool { try client.readLine() }
                #expect(try parse(reply)["result"] == ["hello", 5])
                server.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }

        /// Clients that keep connecting while the server shuts down: some are accepted and set
        /// up but never served (the server is draining). Each of them is closed, and closing
        /// them does not stop the process (an `NIOAsyncChannel` dropped with its writer
        /// unfinished did, once in a few hundred shutdowns).
        @Test(arguments: 0..<20)
        func connectionsAcceptedDuringShutdownAreClosed(round: Int) async throws {
            let gate = self.gate
            let key = "drain\(round)"
            let directory = try makeTemporaryDirectory(prefix: "blefleet-rpc")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("rpc.sock").path
            let server = RPCServer(
                configuration: RPCServerConfiguration(listener: .path(path), socketGroup: nil, shutdownGracePeriod: .seconds(10)),
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate), logger: .silent)
            try await server.bind()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                // A call in flight keeps the server draining, not stopped.
                let caller = try UnixSocketClient(path: path)
                try caller.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"\#(key)"},"id":1}"# + "\n")
                try await eventually("the call is in flight") { gate.waiting(key) }
                let clients = Task {
                    try await offPool {
                        var clients: [UnixSocketClient] = []
                        while let client = try? UnixSocketClient(path: path) { clients.append(client) }
                        return clients
                    }
                }
                server.triggerGracefulShutdown()
                let connected = try await clients.value
                for client in connected {
                    let lines = try await offPool { try client.readToEnd() }
                    #expect(lines.isEmpty)
                }
                gate.open(key)
                let lines = try await offPool { try caller.readToEnd() }
                #expect(try lines.map(parse) == [["jsonrpc": "2.0", "result": .string(key), "id": 1]])
                try await group.waitForAll()
            }
            try await eventually("no socket left") { socketCount(boundTo: path) == 0 }
        }

        @Test func shutdownCancelsCallsAfterTheGracePeriod() async throws {
            let gate = self.gate
            let clock = ContinuousClock()
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate),
                configure: { $0.shutdownGracePeriod = .milliseconds(200) }
            ) { path, server in
                let client = try UnixSocketClient(path: path)
                try client.send(#"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"never"},"id":1}"# + "\n")
                try await eventually("the call is in flight") { gate.waiting("never") }
                let elapsed = try await clock.measure {
                    server.triggerGracefulShutdown()
                    _ = try await offPool { try client.readToEnd(timeout: .seconds(5)) }
                }
                #expect(elapsed < .seconds(5))
            }
        }

        @Test func socketFileGetsItsModeAndGroup() async throws {
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate),
                configure: {
                    $0.socketMode = 0o660
                    $0.socketGroup = "nogroup"
                }
            ) { path, _ in
                var info = stat()
                #expect(stat(path, &info) == 0)
                #expect(info.st_mode & 0o777 == 0o660)
                #expect(info.st_gid == 65534)
                #expect(info.st_mode & S_IFMT == S_IFSOCK)
            }
        }

        @Test func aMissingSocketGroupIsAClearErrorAtStart() async throws {
            let directory = try makeTemporaryDirectory(prefix: "blefleet-rpc")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("rpc.sock").path
            let server = RPCServer(
                configuration: RPCServerConfiguration(listener: .path(path), socketGroup: "no-such-group-blefleet"),
                dispatcher: TestCatalogue.makeDispatcher(), logger: .silent)
            await #expect {
                try await server.bind()
            } throws: { error in
                "\(error)".contains("The socket group 'no-such-group-blefleet' does not exist")
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }

        @Test func aSecondRunIsRefusedWhileTheFirstServes() async throws {
            try await withServer(dispatcher: TestCatalogue.makeDispatcher()) { path, server in
                @Sendable func call() throws -> String? {
                    let client = try UnixSocketClient(path: path)
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":1}"# + "\n")
                    return try client.readLine()
                }
                // Answered: the first run() serves.
                let first = try await offPool(call)
                #expect(try parse(first)["result"] == ["hello", 5])
                await #expect {
                    try await server.run()
                } throws: { error in
                    "\(error)" == "The server's socket is already being served by another run()."
                }
                // The first run() still serves.
                let second = try await offPool(call)
                #expect(try parse(second)["result"] == ["hello", 5])
            }
        }

        @Test func aBoundServerShutDownBeforeItRunsRemovesItsSocketAndRunReturns() async throws {
            let directory = try makeTemporaryDirectory(prefix: "blefleet-rpc")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("rpc.sock").path
            let server = RPCServer(
                configuration: RPCServerConfiguration(listener: .path(path), socketGroup: nil),
                dispatcher: TestCatalogue.makeDispatcher(), logger: .silent)
            try await server.bind()
            #expect(FileManager.default.fileExists(atPath: path))
            server.triggerGracefulShutdown()
            #expect(!FileManager.default.fileExists(atPath: path))
            // A service told to stop before it started: run() returns at once, without error.
            try await server.run()
            #expect((try? UnixSocketClient(path: path)) == nil)
        }

        @Test func servesAnAlreadyListeningDescriptor() async throws {
            let directory = try makeTemporaryDirectory(prefix: "blefleet-rpc")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("activated.sock").path
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            try #require(bound == 0 && listen(descriptor, 16) == 0)
            let server = RPCServer(
                configuration: RPCServerConfiguration(listener: .fileDescriptor(descriptor)),
                dispatcher: TestCatalogue.makeDispatcher(), logger: .silent)
            try await server.bind()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                let line = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":1}"# + "\n")
                    return try client.readLine()
                }
                #expect(try parse(line)["result"] == ["hello", 5])
                server.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }
}
