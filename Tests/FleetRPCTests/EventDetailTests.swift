import Testing

@testable import FleetRPC
import JSONRPC

/// An event's `data` is described once (``EventDetail``): what the daemon writes is what
/// every client reads back, case for case.
@Suite struct EventDetailTests {
    static let all: [EventDetail] = [
        .state(from: .connecting, to: .ready), .added(name: "nano-01"), .added(name: nil), .removed, .alias("bench-left"), .alias(nil),
        .temperature(celsius: -4), .sensor(name: "humidity", value: 40.25, unit: "%"), .sensor(name: "count", value: 3, unit: nil),
        .led(on: true), .adapter(powered: false),
    ]

    @Test(arguments: all)
    func whatTheDaemonWritesIsReadBack(_ detail: EventDetail) throws {
        let sent = EventNotification(detail, address: "AA:BB:CC:DD:EE:01", time: "2026-11-22T09:30:00Z")
        let received = try JSONCodec.decode(EventNotification.self, from: JSONCodec.encode(sent))
        #expect(received.topic == detail.topic)
        #expect(received.detail == detail)
    }

    @Test func theWireIsAsDocumented() {
        #expect(EventDetail.added(name: nil).data == ["event": "added", "name": nil], "no name is null, not left out")
        #expect(EventDetail.state(from: .connecting, to: .ready).data == ["event": "state", "from": "connecting", "state": "ready"])
        #expect(EventDetail.sensor(name: "count", value: 3, unit: nil).data == ["sensor": "count", "value": 3.0])
        #expect(EventDetail(topic: .boards, data: ["event": "renamed"]) == nil, "a newer daemon's event is not misread")
        #expect(EventDetail(topic: .temperature, data: ["celsius": "warm"]) == nil)
    }
}
