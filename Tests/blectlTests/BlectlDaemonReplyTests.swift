import FleetRPC
import JSONRPC
import Foundation
import TestSupport
import Testing

/// blectl against a newline-JSON server that answers with fixed daemon-shaped results:
/// what blectl sends and how it prints the replies.
@Suite("blectl output for daemon replies")
struct BlectlDaemonReplyTests {
    static let ledResult: JSONValue = [
        "results": [
            ["address": "AA:BB:CC:DD:EE:01", "name": "nano-01", "ok": true, "latencyMs": 83],
            [
                "address": "AA:BB:CC:DD:EE:02", "name": "nano-02", "ok": false, "latencyMs": 5001,
                "error": ["code": "timeout", "message": "The board did not answer in time.", "retryable": true],
            ],
        ],
        "totals": ["ok": 1, "failed": 1],
    ]

    static let temperatureResult: JSONValue = [
        "results": [
            ["address": "AA:BB:CC:DD:EE:01", "name": "nano-01", "ok": true, "celsius": 21, "ageMs": 3000, "latencyMs": 0],
            ["address": "AA:BB:CC:DD:EE:02", "name": "nano-02", "ok": true, "celsius": -5, "ageMs": 0, "latencyMs": 40],
        ],
        "totals": ["ok": 2, "failed": 0],
    ]

    /// Answers with `result` for `method`, permission denied for `led.set` when `denyWrites`.
    static func serve(_ results: [String: JSONValue], requests: Requests, denyWrites: Bool = false)
        -> @Sendable (String, LineJSONServer.Connection) -> Void
    {
        { line, connection in
            guard let request = Received(line) else { return }
            requests.append(request)
            if denyWrites && request.method == "led.set" {
                connection.send(request.error(-32000, "Permission denied: read-only clients may not call led.set."))
            } else if let result = results[request.method] {
                connection.send(request.result(result))
            } else {
                connection.send(request.error(-32601, "Method not found: \"\(request.method)\"."))
            }
        }
    }

    @Test("led on --all: sends led.set, one row per board, the summary, exit 1 when a board failed")
    func ledTable() async throws {
        let requests = Requests()
        try await LineJSONServer.with(handler: Self.serve(["led.set": Self.ledResult], requests: requests)) { server in
            let output = try await Blectl.run(["led", "on", "--all", "--socket", server.path])
            #expect(output.status == 1, "\(output)")
            #expect(output.stdout == """
                NAME     ADDRESS             TIME  RESULT
                nano-01  AA:BB:CC:DD:EE:01  83 ms  on
                nano-02  AA:BB:CC:DD:EE:02  5.0 s  failed: The board did not answer in time.
                1/2 boards on, 1 failed

                """)
            #expect(requests.all.map(\.method) == ["led.set"])
            #expect(requests.all.first?.params == ["select": "all", "on": true])
        }
    }

    @Test("--json prints the daemon's result as one document; --no-legend drops header and summary")
    func jsonAndNoLegend() async throws {
        let requests = Requests()
        try await LineJSONServer.with(handler: Self.serve(["led.set": Self.ledResult], requests: requests)) { server in
            let json = try await Blectl.run(["--json", "led", "off", "nano-0?", "AA:BB:CC:DD:EE:02", "--socket", server.path])
            #expect(json.status == 1)
            #expect(try JSONValue(parsing: json.stdout) == Self.ledResult)
            #expect(requests.all.first?.params == ["select": ["nano-0?", "AA:BB:CC:DD:EE:02"], "on": false])
            let bare = try await Blectl.run(["led", "on", "--all", "--no-legend", "--socket", server.path])
            #expect(bare.stdout.split(separator: "\n").count == 2)
            #expect(!bare.stdout.contains("NAME"))
            #expect(!bare.stdout.contains("boards on"))
        }
    }

    @Test("temp: all boards by default, held readings up to 60 s, --fresh asks for a new read; signed and aligned")
    func temp() async throws {
        let requests = Requests()
        try await LineJSONServer.with(handler: Self.serve(["temperature.read": Self.temperatureResult], requests: requests)) { server in
            let output = try await Blectl.run(["temp", "--socket", server.path])
            #expect(output.status == 0, "\(output)")
            #expect(output.stdout == """
                NAME     ADDRESS             TEMP  AGE
                nano-01  AA:BB:CC:DD:EE:01  21 °C  3 s ago
                nano-02  AA:BB:CC:DD:EE:02  -5 °C  0 s ago
                2/2 boards read

                """)
            _ = try await Blectl.run(["temp", "--fresh", "nano-02", "--socket", server.path])
            #expect(requests.all.map(\.params) == [["select": "all", "maxAgeMs": 60000], ["select": "nano-02", "maxAgeMs": 0]])
        }
    }

    @Test("Permission denied by the daemon: 77 and the group hint")
    func deniedByDaemon() async throws {
        try await LineJSONServer.with(handler: Self.serve([:], requests: Requests(), denyWrites: true)) { server in
            let output = try await Blectl.run(["led", "on", "--all", "--socket", server.path])
            #expect(output.status == 77, "\(output)")
            #expect(output.stderr.contains("sudo usermod -aG blefleet $USER"))
        }
    }

    @Test("An RPC error is said in words and exits 1; rpc prints the error object")
    func rpcError() async throws {
        try await LineJSONServer.with(handler: Self.serve(["daemon.status": ["version": "1"]], requests: Requests())) { server in
            let output = try await Blectl.run(["rpc", "no.such", "{}", "--socket", server.path])
            #expect(output.status == 1)
            #expect(try JSONValue(parsing: output.stdout)["error"]?["code"] == -32601)
            #expect(output.stderr.contains("no.such failed: Method not found"))
            let ok = try await Blectl.run(["rpc", "daemon.status", "--socket", server.path])
            #expect(ok.status == 0)
            #expect(try JSONValue(parsing: ok.stdout) == ["version": "1"])
        }
    }

    @Test("watch prints one line per event, --json one object per line; the daemon leaving exits 69")
    func watch() async throws {
        let event: JSONValue = [
            "jsonrpc": "2.0", "method": "events.event",
            "params": ["topic": "led", "address": "AA:BB:CC:DD:EE:01", "time": "2024-05-01T12:00:00Z", "data": ["on": true]],
        ]
        let requests = Requests()
        let handler: @Sendable (String, LineJSONServer.Connection) -> Void = { line, connection in
            guard let request = Received(line) else { return }
            requests.append(request)
            switch request.method {
            case "boards.list":
                connection.send(request.result(["boards": [["address": "AA:BB:CC:DD:EE:01", "name": "nano-01", "state": "ready"]]]))
            case "events.subscribe":
                connection.send(request.result(["topics": ["led"]]))
                connection.send(event.description + "\n" + event.description + "\n")
                connection.close()
            default:
                connection.send(request.error(-32601, "Method not found."))
            }
        }
        try await LineJSONServer.with(handler: handler) { server in
            let text = try await Blectl.run(["watch", "--topic", "led", "--socket", server.path])
            #expect(text.status == 69, "\(text)")
            let lines = text.stdout.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.allSatisfy { $0.hasSuffix("led          nano-01 (AA:BB:CC:DD:EE:01)  LED on") }, "\(text)")
            #expect(requests.all.last?.params == ["topics": ["led"]])
            let json = try await Blectl.run(["watch", "--json", "--socket", server.path])
            let objects = try json.stdout.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
            #expect(objects == [event["params"]!, event["params"]!])
        }
    }
}
