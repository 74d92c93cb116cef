import BlectlCore
import FleetRPC
import Testing

@Suite struct TablesTests {
    let now = Timestamp.parse("2024-05-01T12:00:10Z")!

    @Test("boards: NAME ADDRESS STATE ADAPTER RSSI LED TEMP SEEN, alias before name, dashes for unknowns, connected boards say so")
    func boards() {
        var first = BoardInfo(
            address: BoardAddress("AA:BB:CC:DD:EE:01")!, name: "nano-01", state: .ready, rssi: -61, led: true,
            temperature: TemperatureReading(value: Celsius(degrees: 21), age: .milliseconds(3000)), lastSeen: "2024-05-01T12:00:07Z")
        first.adapter = "hci1"
        let boards = [
            first,
            BoardInfo(
                address: BoardAddress("AA:BB:CC:DD:EE:02")!, name: "nano-02", alias: "freezer", state: .absent,
                temperature: TemperatureReading(value: Celsius(degrees: -5), age: .milliseconds(0)), lastSeen: "2024-05-01T11:58:10Z"),
            BoardInfo(address: BoardAddress("AA:BB:CC:DD:EE:03")!, name: "", state: .discovered, led: false),
        ]
        #expect(Tables.boards(boards, now: now).render() == [
            "NAME     ADDRESS            STATE       ADAPTER  RSSI  LED   TEMP  SEEN",
            "nano-01  AA:BB:CC:DD:EE:01  ready       hci1      -61  on   21 °C  connected",
            "freezer  AA:BB:CC:DD:EE:02  absent      -           -  -    -5 °C  2 min ago",
            "-        AA:BB:CC:DD:EE:03  discovered  -           -  off      -  -",
        ])
    }

    @Test("boards: the LED column tells what the board has, with the wish beside it when they differ")
    func ledTruthAndWish() {
        func row(_ led: Bool?, _ desired: Bool?) -> String {
            Tables.led(BoardInfo(address: BoardAddress("AA:BB:CC:DD:EE:01")!, name: "nano-01", state: .ready, led: led, desiredLed: desired))
        }
        #expect(row(true, true) == "on")
        #expect(row(false, false) == "off")
        #expect(row(false, true) == "off → on")
        #expect(row(true, false) == "on → off")
        #expect(row(nil, true) == "on (pending)")
        #expect(row(true, nil) == "on")
        #expect(row(nil, nil) == "-")
    }

    @Test("Fleet outcomes: one row per board, the error in words")
    func outcomes() {
        let results = [
            BoardOutcome(address: BoardAddress("AA:BB:CC:DD:EE:01")!, name: "nano-01", result: .success(Done()), latency: .milliseconds(83)),
            BoardOutcome(
                address: BoardAddress("AA:BB:CC:DD:EE:02")!, name: "nano-02",
                result: .failure(FleetError(.absent, "The board is not in range.")), latency: .milliseconds(1500)),
        ]
        #expect(Tables.outcomes(results, verb: "on").render() == [
            "NAME     ADDRESS             TIME  RESULT",
            "nano-01  AA:BB:CC:DD:EE:01  83 ms  on",
            "nano-02  AA:BB:CC:DD:EE:02  1.5 s  failed: The board is not in range.",
        ])
    }

    @Test("Temperatures: signed, aligned, with the age of each reading")
    func temperatures() {
        func reading(_ n: Int, _ celsius: Int, ageMs: Int) -> BoardOutcome<TemperatureReading> {
            BoardOutcome(
                address: BoardAddress("AA:BB:CC:DD:EE:0\(n)")!, name: "nano-0\(n)",
                result: .success(TemperatureReading(value: Celsius(degrees: celsius), age: .milliseconds(ageMs))), latency: .zero)
        }
        let results = [
            reading(1, 21, ageMs: 3000), reading(2, -5, ageMs: 0), reading(3, -15, ageMs: 125_000),
            BoardOutcome(
                address: BoardAddress("AA:BB:CC:DD:EE:04")!, name: "nano-04",
                result: .failure(FleetError(.timeout, "The board did not answer within 5 s.")), latency: .seconds(5)),
        ]
        #expect(Tables.temperatures(results).render() == [
            "NAME     ADDRESS              TEMP  AGE",
            "nano-01  AA:BB:CC:DD:EE:01   21 °C  3 s ago",
            "nano-02  AA:BB:CC:DD:EE:02   -5 °C  0 s ago",
            "nano-03  AA:BB:CC:DD:EE:03  -15 °C  2 min ago",
            "nano-04  AA:BB:CC:DD:EE:04       -  failed: The board did not answer within 5 s.",
        ])
    }

    @Test("GATT reads show the value as hex; writes say written")
    func gatt() {
        let board = BoardAddress("AA:BB:CC:DD:EE:01")!
        let read = [BoardOutcome(address: board, name: "nano-01", result: .success(GattBytes([0xfb])), latency: .milliseconds(20))]
        #expect(Tables.gatt(read).render(legend: false) == ["nano-01  AA:BB:CC:DD:EE:01  20 ms  fb"])
        let written = [BoardOutcome(address: board, name: "nano-01", result: .success(Done()), latency: .milliseconds(20))]
        #expect(Tables.gatt(written, verb: "written").render() == [
            "NAME     ADDRESS             TIME  RESULT", "nano-01  AA:BB:CC:DD:EE:01  20 ms  written",
        ])
    }

    @Test("status prints aligned key: value lines")
    func status() {
        let status = DaemonStatus(
            version: "1.0.0", uptimeSeconds: 3723.5, bluez: true, adapter: "hci0", powered: false, discovering: false,
            boards: .init(known: 12, connected: 11, ready: 10), clients: 2)
        let lines = Tables.status(status)
        #expect(lines.contains("Uptime:   1 h 2 min"))
        #expect(lines.contains("Powered:  no"))
        #expect(lines.contains("Boards:   12 known, 11 connected, 10 ready"))
    }

    @Test("status prints one Adapter line per adapter, a missing one said in words")
    func statusWithSeveralAdapters() {
        let status = DaemonStatus(
            version: "1.0.0", uptimeSeconds: 5, bluez: true, adapter: "hci0 (00:1A:7D:DA:71:13)", powered: true,
            discovering: true,
            adapters: [
                .init(
                    name: "hci0", address: "00:1A:7D:DA:71:13", present: true, powered: true, discovering: true,
                    slotsUsed: 4, slotsLimit: 4),
                .init(
                    name: "hci1", address: "00:1A:7D:DA:71:14", present: true, powered: false, discovering: false,
                    slotsUsed: 0, slotsLimit: 5),
                .init(name: "hci2", address: nil, present: false, powered: false, discovering: false, slotsUsed: 0, slotsLimit: 5),
            ],
            boards: .init(known: 12, connected: 4, ready: 4), clients: 1)
        let lines = Tables.status(status)
        #expect(lines.filter { $0.hasPrefix("Adapter:") } == [
            "Adapter: hci0 (00:1A:7D:DA:71:13): on, scanning, 4 of 4 slots used",
            "Adapter: hci1 (00:1A:7D:DA:71:14): off, 0 of 5 slots used",
            "Adapter: hci2: missing (BlueZ does not show it)",
        ])
        #expect(!lines.contains { $0.hasPrefix("Powered:") || $0.hasPrefix("Scanning:") })
    }
    @Test("status says a stuck adapter is recovering, one that failed to recover, and when one recovered")
    func statusWithStuckAdapters() {
        let recovering = DaemonStatus.Recovery(symptom: .hearsNothing, step: .restartDiscovery, started: "2026-11-25T10:41:50Z")
        let failed = DaemonStatus.Recovery(symptom: .commandsTimeOut, step: .reset, started: "2026-11-25T10:41:50Z")
        let recovered = DaemonStatus.Recovery(
            symptom: .connectsFail, step: .powerCycle, started: "2026-11-25T10:41:50Z", recovered: "2026-11-25T10:42:07Z")
        func adapter(_ name: String, _ health: AdapterCondition?, _ recovery: DaemonStatus.Recovery?) -> DaemonStatus.Adapter {
            .init(
                name: name, address: nil, present: true, powered: true, discovering: true, slotsUsed: 0, slotsLimit: 5,
                health: health, lastRecovery: recovery)
        }
        let status = DaemonStatus(
            version: "1.0.0", uptimeSeconds: 5, bluez: true, adapter: "hci0", powered: true, discovering: true,
            adapters: [
                adapter("hci0", .recovering, recovering), adapter("hci1", .failed, failed),
                adapter("hci2", .ok, recovered), adapter("hci3", .ok, nil),
            ],
            boards: .init(known: 12, connected: 4, ready: 4), clients: 1)
        let lines = Tables.status(status).filter { $0.hasPrefix("Adapter:") }
        let clock = Timestamp.clock(Timestamp.parse("2026-11-25T10:42:07Z")!)
        #expect(lines == [
            "Adapter: hci0: on, scanning, 0 of 5 slots used, stuck, recovering (hears nothing; restart-discovery)",
            "Adapter: hci1: on, scanning, 0 of 5 slots used, stuck, did not recover (commands time out; reset); its boards use the others",
            "Adapter: hci2: on, scanning, 0 of 5 slots used, recovered at \(clock) (connects fail; power-cycle)",
            "Adapter: hci3: on, scanning, 0 of 5 slots used",
        ])
    }
}
