import FleetModel
import FleetRPC
import FleetWeb
import Foundation
import TestSupport
import Testing

/// blefleet-web(8) against the binary's options and the metrics it serves.
@Suite("man/blefleet-web.8")
struct BlefleetWebManPageTests {
    /// blefleet-web's long options, from its own parser (`--experimental-dump-help`).
    static func flags() throws -> [String] {
        let output = try ChildProcess.runBlocking(try builtExecutable("blefleet-web"), ["--experimental-dump-help"])
        return try ManPage.longOptions(dumpedHelp: output.stdout)
    }

    @Test("Every option is in the synopsis and has an entry")
    func options() throws {
        let page = try ManPage("blefleet-web.8")
        let synopsis = try #require(page.section("SYNOPSIS"))
        let flags = try Self.flags()
        #expect(Set(flags) == [
            "--socket", "--listen", "--auth-file", "--max-connections", "--max-connections-per-address",
            "--max-streams-per-user", "--idle-timeout", "--log-target", "--log-level",
        ])
        for flag in flags {
            let macro = "Fl \(flag.dropFirst())"
            #expect(synopsis.contains { $0.hasSuffix(macro) || $0.contains(macro + " ") }, "\(flag) not in SYNOPSIS")
            #expect(page.source.contains("\n.It \(macro)"), "\(flag) has no entry")
        }
        #expect(page.rendered.contains(ListenAddress.default.description), "the default --listen is not documented")
    }

    @Test("Every metric blefleet-web serves is documented")
    func metrics() throws {
        let page = try ManPage("blefleet-web.8")
        let board = BoardInfo(
            address: try #require(BoardAddress("F0:0D:00:00:00:01")), name: "nano-01", state: .ready, rssi: -50, led: true,
            adapter: "hci0", profile: "lab",
            sensors: ["temperature": SensorInfo(value: 21, unit: "°C"), "humidity": SensorInfo(value: 40.5, unit: "%")])
        let text = FleetMetrics.render(boards: [board], reconnects: [board.address: 1], version: "1.0")
        let names = Set(text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) })
        #expect(names.count >= 8, "\(text)")
        for name in names where name != "blefleet_humidity_percent" {
            #expect(page.source.contains(".It Li \(name)"), "\(name) is not documented")
        }
        #expect(page.rendered.contains("blefleet_humidity_percent"))
    }

    @Test("mandoc -Tlint finds nothing but references to pages not installed")
    func lint() throws {
        #expect(try ManPage("blefleet-web.8").lintProblems() == [])
    }
}
