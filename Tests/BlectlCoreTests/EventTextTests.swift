import BlectlCore
import FleetRPC
import JSONRPC
import Testing

@Suite struct EventTextTests {
    @Test("Each topic reads as a short line with the board's name")
    func lines() throws {
        let temperature: JSONValue = [
            "topic": "temperature", "address": "AA:BB:CC:DD:EE:01", "time": "2024-05-01T12:00:00Z", "data": ["celsius": -5],
        ]
        let line = try #require(EventText.line(temperature, names: ["AA:BB:CC:DD:EE:01": "nano-01"]))
        #expect(line.hasSuffix("  temperature  nano-01 (AA:BB:CC:DD:EE:01)  -5 °C"))
        #expect(EventText.detail(topic: "led", data: ["on": false]) == "LED off")
        // Each as the daemon writes it (EventDetail's data).
        #expect(EventText.detail(topic: "boards", data: EventDetail.state(from: .connecting, to: .ready).data) == "ready")
        #expect(EventText.detail(topic: "boards", data: EventDetail.alias(nil).data) == "alias removed")
        #expect(EventText.detail(topic: "adapter", data: EventDetail.adapter(powered: false).data) == "adapter off")
        let sensor = EventDetail.sensor(name: "humidity", value: 40.25, unit: "%").data
        #expect(EventText.detail(topic: "sensor", data: sensor) == "humidity 40.25 %")
        let added: JSONValue = ["topic": "boards", "address": "AA:BB:CC:DD:EE:02", "time": "x", "data": EventDetail.added(name: "nano-02").data]
        #expect(EventText.line(added)?.hasSuffix("boards       nano-02 (AA:BB:CC:DD:EE:02)  added") == true)
        // What this blectl does not know (a newer daemon's) is shown as it came.
        #expect(EventText.detail(topic: "future", data: ["x": 1]) == #"{"x":1}"#)
        #expect(EventText.detail(topic: "boards", data: ["event": "renamed", "name": "y"]) == #"{"event":"renamed","name":"y"}"#)
        #expect(EventText.line(["no": "topic"]) == nil)
    }
}
