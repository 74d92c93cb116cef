import Testing

@testable import FleetMQTT

/// The bridge's queue toward a slow or absent broker: bounded, one entry per topic, the
/// oldest temperature updates dropped first (and counted).
@Suite struct MQTTOutboxTests {
    func message(_ topic: String, _ payload: String, temperature: Bool = false) -> MQTTOutbox.Message {
        MQTTOutbox.Message(topic: topic, payload: Array(payload.utf8), retain: true, isTemperature: temperature)
    }

    func drain(_ outbox: inout MQTTOutbox) -> [String] {
        var sent: [String] = []
        while let next = outbox.take() { sent.append("\(next.topic)=\(String(decoding: next.payload, as: UTF8.self))") }
        return sent
    }

    @Test func aNewerValueReplacesTheQueuedOneInPlace() {
        var outbox = MQTTOutbox(limit: 10)
        outbox.put(message("a/temperature", "20", temperature: true))
        outbox.put(message("a/led", "ON"))
        outbox.put(message("a/temperature", "21", temperature: true))
        #expect(outbox.count == 2)
        #expect(drain(&outbox) == ["a/temperature=21", "a/led=ON"])
        #expect(outbox.dropped == 1)
    }

    @Test func whenFullTheOldestTemperatureGoesFirstAndStatesStay() {
        var outbox = MQTTOutbox(limit: 3)
        outbox.put(message("a/availability", "online"))
        outbox.put(message("a/temperature", "20", temperature: true))
        outbox.put(message("b/temperature", "19", temperature: true))
        outbox.put(message("b/availability", "offline"))
        #expect(outbox.count == 3)
        #expect(outbox.dropped == 1)
        #expect(drain(&outbox) == ["a/availability=online", "b/temperature=19", "b/availability=offline"])
    }

    @Test func withNoTemperatureLeftTheOldestMessageGoes() {
        var outbox = MQTTOutbox(limit: 2)
        for index in 0..<5 { outbox.put(message("t\(index)", "x")) }
        #expect(outbox.count == 2)
        #expect(outbox.dropped == 3)
        #expect(drain(&outbox) == ["t3=x", "t4=x"])
        #expect(outbox.isEmpty)
    }
}
