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
        #expect(EventText.detail(topic: "boards", data: ["state": "ready", "rssi": -60, "name": "x"]) == "ready, -60 dBm")
        #expect(EventText.detail(topic: "adapter", data: ["powered": true, "bluez": false]) == "adapter powered, BlueZ down")
        #expect(EventText.detail(topic: "future", data: ["x": 1]) == #"{"x":1}"#)
        #expect(EventText.line(["no": "topic"]) == nil)
    }
}
