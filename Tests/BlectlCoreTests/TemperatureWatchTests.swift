import BlectlCore
import FleetRPC
import JSONRPC
import Testing

@Suite struct TemperatureWatchTests {
    let start = Timestamp.parse("2024-05-01T12:00:00Z")!

    func initial() -> [BoardOutcome<TemperatureReading>] {
        [
            BoardOutcome(
                address: BoardAddress("AA:BB:CC:DD:EE:01")!, name: "nano-01",
                result: .success(TemperatureReading(value: Celsius(degrees: 21), age: .seconds(3))), latency: .zero),
            BoardOutcome(
                address: BoardAddress("AA:BB:CC:DD:EE:02")!, name: "nano-02",
                result: .failure(FleetError(.absent, "The board is not in range.")), latency: .zero),
        ]
    }

    func event(_ address: String, _ celsius: Int, at time: String) -> JSONValue {
        ["topic": "temperature", "address": .string(address), "time": .string(time), "data": ["celsius": .int(Int64(celsius))]]
    }

    @Test("Ages grow with time; an event replaces a board's reading and clears its error")
    func updates() {
        var watch = TemperatureWatch(initial: initial(), now: start, acceptsNewBoards: false)
        #expect(watch.table(now: start + 7).render(legend: false) == [
            "nano-01  AA:BB:CC:DD:EE:01  21 °C  10 s ago",
            "nano-02  AA:BB:CC:DD:EE:02      -  failed: The board is not in range.",
        ])
        let row = watch.apply(event("aa:bb:cc:dd:ee:02", -5, at: "2024-05-01T12:00:08Z"), now: start + 8)
        #expect(row?.celsius == -5)
        #expect(watch.table(now: start + 9).render(legend: false)[1] == "nano-02  AA:BB:CC:DD:EE:02  -5 °C  1 s ago")
    }

    @Test("Events of other topics, other boards (for a selection), or without celsius are ignored")
    func ignores() {
        var watch = TemperatureWatch(initial: initial(), now: start, acceptsNewBoards: false)
        #expect(watch.apply(event("AA:BB:CC:DD:EE:09", 3, at: "2024-05-01T12:00:01Z"), now: start) == nil)
        #expect(watch.apply(["topic": "led", "address": "AA:BB:CC:DD:EE:01", "data": ["on": true]], now: start) == nil)
        #expect(watch.apply(["topic": "temperature", "address": "AA:BB:CC:DD:EE:01", "data": [:]], now: start) == nil)
        #expect(watch.rows.count == 2)
        var all = TemperatureWatch(initial: initial(), now: start, acceptsNewBoards: true)
        #expect(all.apply(event("AA:BB:CC:DD:EE:09", 3, at: "2024-05-01T12:00:01Z"), now: start + 1) != nil)
        #expect(all.rows.count == 3)
    }

    @Test("Streamed readings as JSON are event objects")
    func eventShape() {
        let watch = TemperatureWatch(initial: initial(), now: start, acceptsNewBoards: false)
        #expect(TemperatureWatch.event(watch.rows[0]) == [
            "topic": "temperature", "address": "AA:BB:CC:DD:EE:01", "time": "2024-05-01T11:59:57Z", "data": ["celsius": 21],
        ])
        #expect(TemperatureWatch.event(watch.rows[1]) == nil)
        #expect(TemperatureWatch.line(watch.rows[0]).hasSuffix("  nano-01  AA:BB:CC:DD:EE:01  21 °C"))
    }
}
