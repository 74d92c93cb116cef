import FleetRPC
import Foundation
import JSONRPC
import Testing
import TestSupport

/// Every reading kept by the daemon, asked for through blectl: a daemon on a testbed, its
/// boards notifying, one reading made by a read, and a restart on the same state directory.
@Suite struct HistoryEndToEndTests {
    /// Polls `history.read` through blectl (bounded) until `done` holds for its boards.
    static func waitForHistory(
        socket: String, lane: Lane, _ what: String, _ done: ([JSONValue]) -> Bool
    ) async throws -> [JSONValue] {
        var last: [JSONValue] = []
        try await eventually(
            "the history shows \(what)", within: lane.allowing(.seconds(20)), every: .milliseconds(200), otherwise: "last: \(last)"
        ) {
            let output = try await Blectl.run(["--socket", socket, "--json", "history", "--since", "10m", "--resolution", "raw"])
            last = (try? JSONValue(parsing: output.stdout))?["boards"]?.arrayValue ?? []
            return done(last)
        }
        return last
    }

    static func values(_ board: JSONValue) -> [Double] {
        board["points"]?.arrayValue?.compactMap { $0["value"]?.doubleValue } ?? []
    }

    @Test(arguments: Lane.enabled)
    func everyReadingIsKeptShownAsATableAndCSVAndOutlivesARestart(lane: Lane) async throws {
        let state = try makeTemporaryDirectory(prefix: "history-state")
        defer { try? FileManager.default.removeItem(at: state) }
        try await RunningDaemon.with(lane: lane, boards: 3, stateDirectory: state.path) { testbed, daemon in
            try await BlefleetdEndToEndTests.waitForReadyBoards(3, socket: daemon.socket, lane: lane)
            // A reading that comes from a read, not a notification: -5 °C on nano-02, read at once.
            try await testbed.run(["board", "temp", "nano-02", "-5"])
            let read = try await Blectl.run(["--socket", daemon.socket, "temp", "--fresh", "nano-02"])
            #expect(read.stdout.contains("-5 °C"), "\(read)")
            let boards = try await Self.waitForHistory(socket: daemon.socket, lane: lane, "3 readings of each board and nano-02's -5") {
                boards in
                boards.count == 3 && boards.allSatisfy { Self.values($0).count >= 3 }
                    && boards.contains { $0["name"] == "nano-02" && Self.values($0).contains(-5) }
            }
            #expect(boards.map { $0["name"]?.stringValue ?? "" }.sorted() == ["nano-01", "nano-02", "nano-03"])
            let nano01 = try #require(boards.first { $0["name"] == "nano-01" })
            #expect(Self.values(nano01).allSatisfy { $0 == 21 }, "\(nano01)")

            // The table: each board's figures, and its trend drawn with block characters.
            let table = try await Blectl.run(
                ["--socket", daemon.socket, "history", "--since", "10m"],
                environment: Blectl.environment(["LANG": "C.UTF-8", "LC_ALL": "", "COLUMNS": "100"]))
            #expect(table.status == 0, "\(table)")
            let lines = table.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("NAME") == true && lines.first?.contains("TREND") == true, "\(table)")
            let row = try #require(lines.first { $0.hasPrefix("nano-02") }, "\(table)")
            let cells = row.split(separator: " ", omittingEmptySubsequences: true)
            #expect(cells[2] == "-5", "MIN of nano-02: \(row)")
            #expect(cells.last?.allSatisfy { "▁▂▃▄▅▆▇█".contains($0) } == true, "trend: \(row)")
            #expect(lines.last?.contains("temperature, every reading") == true, "\(table)")
            // Not a UTF-8 locale: the trend in ASCII.
            let ascii = try await Blectl.run(
                ["--socket", daemon.socket, "history", "--since", "10m"],
                environment: Blectl.environment(["LANG": "C", "LC_ALL": "", "LC_CTYPE": ""]))
            #expect(!ascii.stdout.contains(where: { "▁▂▃▄▅▆▇█".contains($0) }), "\(ascii)")

            // CSV: a header, then one line per reading.
            let csv = try await Blectl.run(["--socket", daemon.socket, "history", "nano-01", "--since", "10m", "--csv"])
            let csvLines = csv.stdout.split(separator: "\n")
            #expect(csvLines.first == "address,name,sensor,time,value,min,max,count")
            let address = try #require(nano01["address"]?.stringValue)
            #expect(csvLines.dropFirst().allSatisfy { $0.hasPrefix("\(address),nano-01,temperature,") }, "\(csv)")
            #expect(csvLines.count >= 4, "\(csv)")

            // 5-minute buckets agree with the readings they hold: count, minimum (the read's
            // -5), maximum and mean. nano-02 is switched off first, so that no reading comes
            // between the two queries, and the span reaches past every bucket it touches.
            _ = try await testbed.run(["board", "drop", "nano-02"])
            let span = [
                "--since", WireTime.text(WireTime.milliseconds(Date()) - 600_000),
                "--until", WireTime.text(WireTime.milliseconds(Date()) + 600_000),
            ]
            func history(_ resolution: String) async throws -> JSONValue {
                let output = try await Blectl.run(
                    ["--socket", daemon.socket, "--json", "history", "nano-02", "--resolution", resolution] + span)
                return try JSONValue(parsing: output.stdout)
            }
            // Its last reading written: two reads a flush apart agree.
            var raw: [Double] = []
            let deadline = ContinuousClock.now + lane.allowing(.seconds(20))
            while ContinuousClock.now < deadline {
                let before = Self.values(try #require(try await history("raw")["boards"]?.arrayValue?.first))
                try await Task.sleep(for: .milliseconds(1500))
                raw = Self.values(try #require(try await history("raw")["boards"]?.arrayValue?.first))
                if raw == before { break }
            }
            let buckets = try await history("5m")
            #expect(buckets["resolution"] == "5m")
            let points = try #require(buckets["boards"]?.arrayValue?.first?["points"]?.arrayValue)
            let counts = points.compactMap { $0["count"]?.int64Value }
            #expect(counts.reduce(0, +) == Int64(raw.count), "\(buckets) against \(raw)")
            #expect(points.compactMap { $0["min"]?.doubleValue }.min() == -5 && raw.min() == -5, "\(buckets)")
            #expect(points.compactMap { $0["max"]?.doubleValue }.max() == raw.max(), "\(buckets)")
            // Whole degrees (the nano profile's temperature): a bucket's mean is told to one
            // decimal, so the means put together are within half a tenth of the readings' own.
            #expect(buckets["boards"]?.arrayValue?.first?["decimals"]?.int64Value == 0, "\(buckets)")
            let means = points.compactMap { $0["value"]?.doubleValue }
            #expect(means.allSatisfy { abs(($0 * 10).rounded() - $0 * 10) < 1e-6 }, "\(buckets)")
            let mean = zip(means, counts).map { $0 * Double($1) }.reduce(0, +) / Double(raw.count)
            #expect(abs(mean - raw.reduce(0, +) / Double(raw.count)) <= 0.05 + 1e-9, "\(buckets) against \(raw)")

            let status = try JSONValue(parsing: try await Blectl.run(["--socket", daemon.socket, "--json", "status"]).stdout)
            #expect(status["history"]?["enabled"] == true, "\(status)")
            #expect(status["history"]?["path"]?.stringValue == state.path + "/history.sqlite3")

            // Mistakes are told as such.
            let typo = try await Blectl.run(["--socket", daemon.socket, "history", "--sensor", "humidty"])
            #expect(typo.status != 0 && typo.stderr.contains("humidty"), "\(typo)")
            let nobody = try await Blectl.run(["--socket", daemon.socket, "history", "nano-99"])
            #expect(nobody.status != 0 && nobody.stderr.contains("nano-99"), "\(nobody)")
            let since = try await Blectl.run(["--socket", daemon.socket, "history", "--since", "yesterday"])
            #expect(since.status == 2 && since.stderr.contains("--since"), "\(since)")
        }
        // Another daemon on the same state directory still has every reading.
        try await RunningDaemon.with(lane: lane, boards: 3, stateDirectory: state.path) { _, daemon in
            try await BlefleetdEndToEndTests.waitForReadyBoards(3, socket: daemon.socket, lane: lane)
            let boards = try await Self.waitForHistory(socket: daemon.socket, lane: lane, "nano-02's -5 after the restart") { boards in
                boards.contains { $0["name"] == "nano-02" && Self.values($0).contains(-5) }
            }
            #expect(boards.count == 3)
        }
    }

    /// A read-only state directory: the fleet works, the history is off, and the daemon
    /// says why (a tmpfs mounted read-only; the tests run as root, whom modes do not stop).
    @Test func aReadOnlyStateDirectoryLeavesTheFleetWorkingAndTheHistoryOffWithItsReason() async throws {
        let state = try makeTemporaryDirectory(prefix: "history-ro")
        defer { try? FileManager.default.removeItem(at: state) }
        _ = try runCommand("/usr/bin/mount", ["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", state.path])
        defer { _ = try? runCommand("/usr/bin/umount", ["-l", state.path]) }
        try await RunningDaemon.with(boards: 2, stateDirectory: state.path) { testbed, daemon in
            try await BlefleetdEndToEndTests.waitForReadyBoards(2, socket: daemon.socket)
            let led = try await Blectl.run(["--socket", daemon.socket, "led", "on", "--all"])
            #expect(led.status == 0, "\(led)")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
            let status = try await Blectl.run(["--socket", daemon.socket, "status"])
            let line = try #require(status.stdout.split(separator: "\n").first { $0.hasPrefix("History:") }, "\(status)")
            #expect(line.contains("off") && line.contains(state.path + "/history.sqlite3"), "\(line)")
            let history = try await Blectl.run(["--socket", daemon.socket, "history"])
            #expect(history.status == 1 && history.stderr.contains("history is off"), "\(history)")
            #expect(daemon.log.contains("history is off"), "\(daemon.log)")
        }
    }

    /// A state directory that fills up while the daemon runs: the history turns off and says
    /// the disk is full, the fleet goes on.
    @Test func aFullStateDirectoryTurnsTheHistoryOffAndTheFleetGoesOn() async throws {
        let state = try makeTemporaryDirectory(prefix: "history-full")
        defer { try? FileManager.default.removeItem(at: state) }
        _ = try runCommand("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", state.path])
        defer { _ = try? runCommand("/usr/bin/umount", ["-l", state.path]) }
        try await RunningDaemon.with(boards: 2, stateDirectory: state.path) { testbed, daemon in
            try await BlefleetdEndToEndTests.waitForReadyBoards(2, socket: daemon.socket)
            // Whatever room is left, taken.
            let filler = state.appendingPathComponent("filler").path
            _ = FileManager.default.createFile(atPath: filler, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: filler))
            while (try? handle.write(contentsOf: Data(count: 16384))) != nil {}
            try handle.close()
            var line = ""
            try? await eventually("the history is off", within: .seconds(20), every: .milliseconds(200)) {
                let status = try await Blectl.run(["--socket", daemon.socket, "status"])
                line = status.stdout.split(separator: "\n").first { $0.hasPrefix("History:") }.map(String.init) ?? ""
                return line.contains("off")
            }
            #expect(line.contains("off") && line.contains("full"), "\(line)")
            let led = try await Blectl.run(["--socket", daemon.socket, "led", "on", "--all"])
            #expect(led.status == 0, "\(led)")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
            #expect(daemon.process.isRunning)
        }
    }

    /// A history file that is not a database: set aside, logged, a new one started; the fleet
    /// never noticed.
    @Test func aCorruptHistoryFileIsSetAsideAndANewOneKeepsTheReadings() async throws {
        let state = try makeTemporaryDirectory(prefix: "history-corrupt")
        defer { try? FileManager.default.removeItem(at: state) }
        let garbage = Data(repeating: 0x42, count: 16384)
        try garbage.write(to: state.appendingPathComponent("history.sqlite3"))
        try await RunningDaemon.with(boards: 2, stateDirectory: state.path) { _, daemon in
            try await BlefleetdEndToEndTests.waitForReadyBoards(2, socket: daemon.socket)
            let boards = try await Self.waitForHistory(socket: daemon.socket, lane: .bluezoo, "readings in the new file") { boards in
                boards.count == 2 && boards.allSatisfy { !Self.values($0).isEmpty }
            }
            #expect(boards.count == 2)
            let aside = try FileManager.default.contentsOfDirectory(atPath: state.path).filter { $0.hasPrefix("history.sqlite3.corrupt-") }
            #expect(aside.count == 1, "\(aside)")
            #expect(try Data(contentsOf: state.appendingPathComponent(aside.first ?? "-")) == garbage)
            #expect(daemon.log.contains("history database was corrupt"), "\(daemon.log)")
        }
    }
}
