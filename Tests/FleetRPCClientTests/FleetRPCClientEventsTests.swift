import FleetRPC
import JSONRPC
import FleetRPCClient
import Foundation
import TestSupport
import Testing

@Suite("FleetRPCClient notifications")
struct FleetRPCClientEventsTests {
    static func event(_ celsius: Int) -> String {
        JSONValue.object([
            "jsonrpc": "2.0", "method": "events.event",
            "params": [
                "topic": "temperature", "address": "AA:BB:CC:DD:EE:01", "time": "2024-05-01T12:00:00Z",
                "data": ["celsius": .int(Int64(celsius))],
            ],
        ]).description + "\n"
    }

    @Test("subscribe sends events.subscribe and yields the events in order; the stream ends when the connection does")
    func subscribe() async throws {
        let subscribed = Box<JSONValue?>(nil)
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line), request.method == "events.subscribe" else { return }
            subscribed.withValue { $0 = request.params }
            // An event before the reply must not be lost, nor a foreign notification confuse it.
            connection.send(Self.event(-5))
            connection.send(request.result(["topics": ["temperature"]]))
            connection.send(#"{"jsonrpc":"2.0","method":"something.else","params":{}}"# + "\n")
            connection.send(Self.event(0))
            connection.send(Self.event(21))
            connection.close()
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            let events = try await client.subscribe(topics: [.temperature])
            var celsius: [Int64] = []
            let error = await #expect(throws: FleetRPCClientError.self) {
                for try await event in events { celsius.append(event.data["celsius"]?.int64Value ?? 999) }
            }
            #expect(celsius == [-5, 0, 21])
            #expect(error == .connectionClosed(method: nil))
            #expect(subscribed.withValue { $0 } == ["topics": ["temperature"]])
        }
    }

    @Test("Raw notifications reach every listener while calls go on")
    func rawNotifications() async throws {
        try await LineJSONServer.with(handler: { line, connection in
            guard let request = Received(line) else { return }
            connection.send(Self.event(7))
            connection.send(request.result("done"))
        }) { server in
            let client = try FleetRPCClient(socketPath: server.path)
            let first = client.notifications()
            let second = client.notifications()
            #expect(try await client.call("poke") == "done")
            var iterator1 = first.makeAsyncIterator()
            var iterator2 = second.makeAsyncIterator()
            let one = try await iterator1.next()
            let two = try await iterator2.next()
            #expect(one?.method == "events.event")
            #expect(two?.params(as: JSONValue.self)?["data"]?["celsius"] == 7)
        }
    }
}
