import FleetRPC
import JSONRPC
import Foundation
import TestSupport
import Testing

/// Several central adapters in one daemon (issue 13): boards spread within each adapter's
/// slots, move when an adapter goes, come back when it returns; absent boards are answered
/// at once. Through the real daemon and blectl, on both lanes.
@Suite(.serialized, .timeLimit(.minutes(6)))
struct SeveralAdaptersTests {
    static func status(_ socket: String) async throws -> JSONValue {
        let output = try await Blectl.run(["--socket", socket, "--json", "status"], timeout: .seconds(10))
        guard output.status == 0 else { throw FixtureError("blectl status failed: \(output)") }
        return try JSONValue(parsing: output.stdout)
    }

    /// Adapter name → (powered, present, slotsUsed, slotsLimit) from `daemon.status`.
    static func adapters(_ status: JSONValue) -> [String: (powered: Bool, present: Bool, used: Int, limit: Int)] {
        var found: [String: (Bool, Bool, Int, Int)] = [:]
        for adapter in status["adapters"]?.arrayValue ?? [] {
            guard let name = adapter["name"]?.stringValue else { continue }
            found[name] = (
                adapter["powered"]?.boolValue ?? false, adapter["present"]?.boolValue ?? false,
                Int(adapter["slotsUsed"]?.int64Value ?? -1), Int(adapter["slotsLimit"]?.int64Value ?? -1)
            )
        }
        return found
    }

    /// Polls `daemon.status` (bounded, scaled for the lane) until `condition` holds.
    @discardableResult
    static func waitForStatus(
        _ socket: String, lane: Lane, _ what: String, timeout: Duration = .seconds(30),
        _ condition: (JSONValue) -> Bool
    ) async throws -> JSONValue {
        var last = JSONValue.null
        try await eventually(
            "the daemon's status shows \(what)", within: lane.allowing(timeout), every: .milliseconds(100), otherwise: "last: \(last)"
        ) {
            last = try await status(socket)
            return condition(last)
        }
        return last
    }

    /// `led.set` on every board with a deadline, through blectl's raw RPC.
    static func ledAll(_ on: Bool, socket: String, deadlineMs: Int) async throws -> JSONValue {
        let output = try await Blectl.run(
            ["--socket", socket, "rpc", "led.set", #"{"select": "all", "on": \#(on), "timeoutMs": \#(deadlineMs)}"#],
            timeout: .seconds(Double(deadlineMs) / 1000 + 30))
        return try JSONValue(parsing: output.stdout)
    }

    static func okCount(_ result: JSONValue) -> Int { Int(result["totals"]?["ok"]?.int64Value ?? -1) }

    @Test(arguments: Lane.enabled)
    func twelveBoardsSpreadOverThreeAdaptersMoveWhenOneIsOffAndComeBack(lane: Lane) async throws {
        try await RunningDaemon.with(
            lane: lane, boards: 12, testbedArguments: ["--centrals", "3"],
            configuration: "socket-group: root\nconnection-limit: 4\nadapter: [hci0, hci1, hci2]\n"
        ) { testbed, daemon in
            try await BlefleetdEndToEndTests.waitForReadyBoards(12, socket: daemon.socket, lane: lane, timeout: 40)
            // All twelve at once, four on each adapter.
            let spread = Self.adapters(try await Self.status(daemon.socket))
            #expect(spread.keys.sorted() == ["hci0", "hci1", "hci2"])
            for name in ["hci0", "hci1", "hci2"] {
                #expect(spread[name]?.used == 4 && spread[name]?.limit == 4, "\(name): \(String(describing: spread[name]))")
            }
            let boards = try await BlefleetdEndToEndTests.waitForBoards(socket: daemon.socket, lane: lane, "12 boards") {
                $0.count == 12
            }
            let perAdapter = Dictionary(grouping: boards) { $0["adapter"]?.stringValue ?? "-" }.mapValues(\.count)
            #expect(perAdapter == ["hci0": 4, "hci1": 4, "hci2": 4], "\(boards)")
            let table = try await Blectl.run(["--socket", daemon.socket, "boards"])
            #expect(table.stdout.split(separator: "\n").first?.contains("ADAPTER") == true, "\(table)")
            let statusText = try await Blectl.run(["--socket", daemon.socket, "status"])
            for name in ["hci0", "hci1", "hci2"] {
                #expect(statusText.stdout.split(separator: "\n").contains { $0.hasPrefix("Adapter:") && $0.contains(" \(name) (") }, "\(statusText)")
            }
            #expect(statusText.stdout.contains("4 of 4 slots used"), "\(statusText)")

            let on = try await Blectl.run(["--socket", daemon.socket, "led", "on", "--all"])
            #expect(on.status == 0 && on.stdout.contains("12/12 boards on"), "\(on)\n\(daemon.log.suffix(20_000))")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })

            // hci1 off with every slot in use: its boards go to hci0 and hci2, which have no
            // free slot, so the LED command, sent at once, rotates them through the eight
            // slots left, never more than four each, and serves all twelve within 3 s.
            try await testbed.run(["adapter", "off", "hci1"])
            let off = try await Self.ledAll(false, socket: daemon.socket, deadlineMs: 3_000)
            #expect(Self.okCount(off) == 12, "\(off)\n\(daemon.log.suffix(20_000))")
            try await Self.waitForStatus(daemon.socket, lane: lane, "hci1 off with no links") {
                let adapters = Self.adapters($0)
                return adapters["hci1"]?.powered == false && adapters["hci1"]?.used == 0
            }
            #expect(try await testbed.state().allSatisfy { $0.led == 0 })
            let during = Self.adapters(try await Self.status(daemon.socket))
            #expect((during["hci0"]?.used ?? 99) <= 4 && (during["hci2"]?.used ?? 99) <= 4, "\(during)")

            // hci1 on again: boards waiting for a slot take it, and the LEDs all go on.
            try await testbed.run(["adapter", "on", "hci1"])
            try await Self.waitForStatus(daemon.socket, lane: lane, "hci1 used again") {
                let adapters = Self.adapters($0)
                return adapters["hci1"]?.powered == true && (adapters["hci1"]?.used ?? 0) > 0
            }
            let again = try await Self.ledAll(true, socket: daemon.socket, deadlineMs: 30_000)
            #expect(Self.okCount(again) == 12, "\(again)\n\(daemon.log.suffix(20_000))")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
            let after = Self.adapters(try await Self.status(daemon.socket))
            #expect(after.values.allSatisfy { $0.used <= 4 }, "\(after)")
        }
    }

    @Test(arguments: Lane.enabled)
    func anAdapterPluggedInIsUsedAndOnePulledOutLeavesNoStaleState(lane: Lane) async throws {
        try await Testbed.with(lane: lane, boards: 4) { testbed in
            // Learn the name the dongle gets, then start without it.
            let plugged = try await testbed.run(["adapter", "plug"]).trimmingCharacters(in: .whitespacesAndNewlines)
            try await testbed.run(["adapter", "unplug"])
            let daemon = try RunningDaemon(
                busAddress: testbed.busAddress,
                configuration: "socket-group: root\nconnection-limit: 2\nadapter: [hci0, \(plugged)]\n")
            defer { daemon.terminate() }
            try await daemon.waitUntilServing()
            try await Self.waitForStatus(daemon.socket, lane: lane, "hci0 with two boards, \(plugged) missing") {
                let adapters = Self.adapters($0)
                return adapters["hci0"]?.used == 2 && adapters[plugged]?.present == false
            }
            let missing = try await Blectl.run(["--socket", daemon.socket, "status"])
            #expect(missing.stdout.contains("\(plugged): missing"), "\(missing)")

            try await testbed.run(["adapter", "plug"])
            try await Self.waitForStatus(daemon.socket, lane: lane, "\(plugged) used") {
                let adapters = Self.adapters($0)
                return adapters[plugged]?.present == true && adapters[plugged]?.used == 2 && $0["boards"]?["ready"]?.int64Value == 4
            }
            let on = try await Self.ledAll(true, socket: daemon.socket, deadlineMs: 20_000)
            #expect(Self.okCount(on) == 4, "\(on)")

            try await testbed.run(["adapter", "unplug"])
            try await Self.waitForStatus(daemon.socket, lane: lane, "\(plugged) gone") {
                let adapters = Self.adapters($0)
                return adapters[plugged]?.present == false && adapters[plugged]?.used == 0
            }
            let boards = try await BlefleetdEndToEndTests.waitForBoards(
                socket: daemon.socket, lane: lane, "no board on \(plugged)"
            ) { $0.count == 4 && !$0.contains { $0["adapter"]?.stringValue == plugged } }
            #expect(boards.count == 4)
            // Two slots for four boards: the command rotates them through hci0.
            let off = try await Self.ledAll(false, socket: daemon.socket, deadlineMs: 30_000)
            #expect(Self.okCount(off) == 4, "\(off)")
            #expect(try await testbed.state().allSatisfy { $0.led == 0 })
        }
    }

    @Test(arguments: Lane.enabled)
    func aBoardSwitchedOffIsAnsweredAbsentAtOnceAndGetsItsLEDWhenBack(lane: Lane) async throws {
        try await RunningDaemon.with(lane: lane, boards: 4) { testbed, daemon in
            try await BlefleetdEndToEndTests.waitForReadyBoards(4, socket: daemon.socket, lane: lane)
            try await testbed.run(["board", "drop", "nano-03"])
            _ = try await BlefleetdEndToEndTests.waitForBoards(socket: daemon.socket, lane: lane, "nano-03 absent") {
                $0.contains { $0["name"]?.stringValue == "nano-03" && $0["state"]?.stringValue == "absent" }
            }
            // A generous deadline: the answer must not wait for it.
            let started = ContinuousClock.now
            let result = try await Self.ledAll(true, socket: daemon.socket, deadlineMs: 20_000)
            let elapsed = started.duration(to: .now)
            #expect(elapsed < .seconds(10), "led.set took \(elapsed) with a 20 s deadline")
            let entries = result["results"]?.arrayValue ?? []
            let absent = try #require(entries.first { $0["name"]?.stringValue == "nano-03" })
            #expect(absent["ok"]?.boolValue == false)
            #expect(absent["error"]?["code"]?.stringValue == "absent", "\(absent)")
            #expect(absent["pending"]?.boolValue == true, "\(absent)")
            #expect(absent["error"]?["message"]?.stringValue?.contains("last seen") == true, "\(absent)")
            #expect(absent["latencyMs"]?.int64Value.map { $0 < 1000 } == true, "\(absent)")
            #expect(entries.filter { $0["ok"]?.boolValue == true }.count == 3, "\(result)")

            let text = try await Blectl.run(["--socket", daemon.socket, "led", "on", "--all"])
            #expect(text.status == 1, "\(text)")
            #expect(text.stdout.contains("3/4 boards on, 1 pending"), "\(text)")

            // Back on: the daemon writes the LED it was asked for, by itself.
            try await testbed.run(["board", "restore", "nano-03"])
            _ = try await BlefleetdEndToEndTests.waitForBoards(socket: daemon.socket, lane: lane, "nano-03 with its LED on") {
                $0.contains { $0["name"]?.stringValue == "nano-03" && $0["led"]?.boolValue == true }
            }
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
        }
    }

    @Test(arguments: Lane.enabled)
    func aBoardConnectsThroughTheAdapterThatHearsItBest(lane: Lane) async throws {
        try await Testbed.with(lane: lane, boards: 2, extraArguments: ["--centrals", "3"]) { testbed in
            // Set before the daemon scans: nano-01 is near hci2, nano-02 near hci1.
            for (board, near) in [("nano-01", "hci2"), ("nano-02", "hci1")] {
                for adapter in ["hci0", "hci1", "hci2"] {
                    try await testbed.run(["board", "signal", board, adapter == near ? "-35" : "-85", "--adapter", adapter])
                }
            }
            let daemon = try RunningDaemon(
                busAddress: testbed.busAddress, configuration: "socket-group: root\nadapter: [hci0, hci1, hci2]\n")
            defer { daemon.terminate() }
            try await daemon.waitUntilServing()
            try await BlefleetdEndToEndTests.waitForReadyBoards(2, socket: daemon.socket, lane: lane)
            let boards = try await BlefleetdEndToEndTests.waitForBoards(socket: daemon.socket, lane: lane, "2 boards") {
                $0.count == 2
            }
            let adapterOf = Dictionary(uniqueKeysWithValues: boards.compactMap { board in
                board["name"]?.stringValue.map { ($0, board["adapter"]?.stringValue ?? "-") }
            })
            #expect(adapterOf == ["nano-01": "hci2", "nano-02": "hci1"], "\(boards)")
        }
    }
}
