import FleetRPC
import JSONRPC
import FleetRPCClient
import Foundation
import Glibc
import TestSupport
import Testing

@Suite("FleetRPCClient over a real Unix socket")
struct FleetRPCClientTests {
    @Test("A call sends one request line and returns the result")
    func callReturnsResult() async throws {
        let lines = Box<[String]>([])
        try await LineJSONServer.with(handler: { line, connection in
            lines.withValue { $0.append(line) }
            echo(line, connection)
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            let result = try await client.call("led.set", params: ["select": "all", "on": true])
            #expect(result == ["select": "all", "on": true])
            let sent = try #require(lines.withValue { $0 }.first)
            let request = try JSONValue(parsing: sent)
            #expect(request["jsonrpc"] == "2.0")
            #expect(request["method"] == "led.set")
            #expect(request["id"]?.int64Value != nil)
        }
    }

    @Test("Concurrent calls answered in reverse order each get their own result")
    func concurrentCallsMatchedByID() async throws {
        let held = Box<[(Received, LineJSONServer.Connection)]>([])
        let count = 20
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line) else { return }
            let batch = held.withValue { held -> [(Received, LineJSONServer.Connection)] in
                held.append((request, connection))
                return held.count == count ? held : []
            }
            for (request, connection) in batch.reversed() {
                connection.send(request.result(request.params ?? .null))
            }
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            try await withThrowingTaskGroup(of: (Int, JSONValue).self) { group in
                for index in 0..<count {
                    group.addTask { (index, try await client.call("echo", params: ["n": .int(Int64(index))])) }
                }
                var seen = 0
                for try await (index, result) in group {
                    #expect(result == ["n": .int(Int64(index))])
                    seen += 1
                }
                #expect(seen == count)
            }
        }
    }

    @Test("Replies split across writes, and several in one write, are framed by newline")
    func framing() async throws {
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line) else { return }
            let reply = Array(request.result(["text": "a\nb", "n": 1]).utf8)
            // Byte by byte, with a blank line and a CRLF frame mixed in.
            connection.send("\n")
            for byte in reply { connection.send([byte]) }
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            #expect(try await client.call("x") == ["text": "a\nb", "n": 1])
            #expect(try await client.call("y") == ["text": "a\nb", "n": 1])
        }
        let (arrived, arrival) = AsyncStream.makeStream(of: String.self)
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line) else { return }
            arrival.yield(request.method)
            guard request.method == "second" else { return }
            // Answer both calls in one write, the first with CRLF.
            let first = Received(#"{"jsonrpc":"2.0","method":"first","id":1}"#)!
            connection.send(first.result("one").replacingOccurrences(of: "\n", with: "\r\n") + request.result("two"))
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            async let first = client.call("first")
            var arrivals = arrived.makeAsyncIterator()
            _ = await arrivals.next()  // the server has "first" before "second" is sent
            async let second = client.call("second")
            #expect(try await first == "one")
            #expect(try await second == "two")
        }
    }

    @Test("JSON-RPC errors become permissionDenied or rpcError with code, message and data")
    func errorMapping() async throws {
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line) else { return }
            if request.method == "led.set" {
                connection.send(request.error(-32000, "Permission denied: join the blefleet group."))
            } else {
                connection.send(request.error(-32001, "No board matched nano-99.", data: ["select": "nano-99"]))
            }
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            await #expect(throws: FleetRPCClientError.permissionDenied(method: "led.set", message: "Permission denied: join the blefleet group.")) {
                try await client.call("led.set", params: ["select": "all", "on": true])
            }
            let error = await #expect(throws: FleetRPCClientError.self) {
                try await client.call("boards.connect", params: ["select": "nano-99"])
            }
            #expect(error == .rpcError(method: "boards.connect", code: -32001, message: "No board matched nano-99.", data: ["select": "nano-99"]))
            #expect(error?.description == "boards.connect failed: No board matched nano-99. (JSON-RPC error -32001)")
        }
    }

    @Test("A call without a reply times out; the connection stays usable")
    func timeout() async throws {
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line), request.method != "silent" else { return }
            connection.send(request.result("late but fine"))
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            let started = ContinuousClock.now
            // A plain 200 ms sleep beside the call, in the same process: a busy machine (or
            // another test holding the pool's threads) delays both alike.
            async let slept: Duration = {
                try? await Task.sleep(for: .milliseconds(200))
                return ContinuousClock.now - started
            }()
            await #expect(throws: FleetRPCClientError.timeout(method: "silent", seconds: 0.2)) {
                try await client.call("silent", timeout: .milliseconds(200))
            }
            // It returned when its own 200 ms were up, as the sleep did: not at the default 30 s.
            let took = ContinuousClock.now - started
            let control = await slept
            #expect(took < control + .seconds(10), "the call took \(took); a 200 ms sleep beside it \(control)")
            #expect(try await client.call("answered") == "late but fine")
        }
    }

    @Test("The server closing the connection fails the waiting call and later ones")
    func connectionClosed() async throws {
        try await LineJSONServer.with(handler: { _, connection in
            connection.close()
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            await #expect(throws: FleetRPCClientError.connectionClosed(method: "daemon.status")) {
                try await client.call("daemon.status")
            }
            await #expect(throws: FleetRPCClientError.connectionClosed(method: "boards.list")) {
                try await client.call("boards.list")
            }
        }
    }

    @Test("A reply that is not JSON-RPC is a malformed reply", arguments: [
        "this is not json\n",
        #"{"jsonrpc":"2.0","result":1,"id":987654}"# + "\n",
        #"{"jsonrpc":"1.0","result":1,"id":1}"# + "\n",
        "[1,2]\n",
    ])
    func malformedReply(reply: String) async throws {
        try await LineJSONServer.with(handler: { _, connection in
            connection.send(reply)
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            let error = await #expect(throws: FleetRPCClientError.self) {
                try await client.call("daemon.status")
            }
            guard case .malformedReply(let detail)? = error else {
                Issue.record("expected a malformed reply, got \(String(describing: error))")
                return
            }
            #expect(!detail.isEmpty)
            #expect(error!.description.hasPrefix("blefleetd sent a malformed reply: "))
        }
    }

    @Test("A result of the wrong shape is a malformed reply naming the type")
    func decodeMismatch() async throws {
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line) else { return }
            connection.send(request.result(["version": 3]))
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            let error = await #expect(throws: FleetRPCClientError.self) {
                try await client.call(FleetMethods.DaemonStatus.self)
            }
            #expect(error?.description.contains("not a DaemonStatus") == true)
        }
    }

    @Test("Typed calls encode params and decode results")
    func typedCall() async throws {
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line) else { return }
            #expect(request.params == ["select": ["lab-*", "AA:BB:CC:DD:EE:FF"], "on": false])
            connection.send(request.result([
                "results": [["address": "AA:BB:CC:DD:EE:FF", "name": "nano-01", "ok": true, "latencyMs": 12]],
                "totals": ["ok": 1, "failed": 0],
            ]))
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            let result = try await client.call(
                FleetMethods.LedSet.self, .init(select: try Selection(parsing: ["lab-*", "AA:BB:CC:DD:EE:FF"]), on: false))
            #expect(
                result
                    == FleetResult(outcomes: [
                        BoardOutcome(
                            address: BoardAddress("AA:BB:CC:DD:EE:FF")!, name: "nano-01", result: .success(Done()),
                            latency: .milliseconds(12))
                    ]))
        }
    }

    @Test("A cancelled call ends with cancelled")
    func cancellation() async throws {
        let (arrived, arrival) = AsyncStream.makeStream(of: Void.self)
        try await LineJSONServer.with(handler: { _, _ in arrival.yield() }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            let task = Task { try await client.call("silent", timeout: .seconds(30)) }
            var arrivals = arrived.makeAsyncIterator()
            _ = await arrivals.next()  // the call is in flight: the server has it
            task.cancel()
            await #expect(throws: FleetRPCClientError.cancelled(method: "silent")) { try await task.value }
        }
    }

    @Test("Params that are not an object or array are refused before sending")
    func scalarParams() async throws {
        try await LineJSONServer.with(handler: echo) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            await #expect(throws: FleetRPCClientError.invalidParams(method: "x", detail: "params must be an object or an array, not an integer")) {
                try await client.call("x", params: 3)
            }
        }
    }
}
