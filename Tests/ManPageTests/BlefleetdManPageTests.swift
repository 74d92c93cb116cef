import BlefleetDaemon
import Foundation
import Systemd
import TestSupport
import Testing

/// blefleetd(8) against the daemon's options, defaults, journal fields and files.
@Suite("man/blefleetd.8")
struct BlefleetdManPageTests {
    /// The daemon's long options, from its own parser (`--experimental-dump-help`).
    static func flags() throws -> [String] {
        let output = try BlefleetdBinary.run(["--experimental-dump-help"])
        return try ManPage.longOptions(dumpedHelp: output.stdout)
    }

    @Test("Every option of the daemon is in the synopsis and has an entry under OPTIONS")
    func options() throws {
        let page = try ManPage("blefleetd.8")
        let synopsis = try #require(page.section("SYNOPSIS"))
        let options = try #require(page.section("OPTIONS"))
        let flags = try Self.flags()
        #expect(Set(flags).isSuperset(of: ["--config", "--socket", "--state-dir", "--adapter", "--bus", "--log-target", "--version"]))
        for flag in flags {
            let macro = "Fl \(flag.dropFirst())"  // mdoc's `Fl -config` prints --config
            #expect(synopsis.contains { $0.hasSuffix(macro) || $0.contains(macro + " ") }, "\(flag) not in SYNOPSIS")
            #expect(options.contains { $0 == ".It \(macro)" || $0.hasPrefix(".It \(macro) ") }, "\(flag) not in OPTIONS")
        }
    }

    /// The statuses EXIT STATUS documents.
    static func documentedStatuses(_ page: ManPage) throws -> Set<Int32> {
        Set(try #require(page.section("EXIT STATUS")).compactMap { line -> Int32? in
            guard line.hasPrefix(".It ") else { return nil }
            return Int32(line.dropFirst(4).prefix { $0.isNumber })
        })
    }

    @Test("The daemon exits with the documented statuses: usage, configuration, bus, socket group")
    func exitStatuses() async throws {
        let page = try ManPage("blefleetd.8")
        let documented = try Self.documentedStatuses(page)
        let directory = try makeTemporaryDirectory(prefix: "blefleetd-man")
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state").path
        let socket = directory.appendingPathComponent("s.sock").path
        let badConfig = directory.appendingPathComponent("bad.conf")
        try "connection-limit: many\n".write(to: badConfig, atomically: true, encoding: .utf8)
        let noGroup = directory.appendingPathComponent("group.conf")
        try "socket-group: no-such-group-blefleet\n".write(to: noGroup, atomically: true, encoding: .utf8)
        let common = ["--socket", socket, "--state-dir", state, "--log-target", "stderr"]

        let version = try BlefleetdBinary.run(["--version"])
        #expect(version.status == 0 && documented.contains(0))
        let usage = try BlefleetdBinary.run(["--no-such-option"])
        #expect(usage.status == 64 && documented.contains(64), "\(usage)")
        let config = try BlefleetdBinary.run(["--config", badConfig.path] + common)
        #expect(config.status == 78 && documented.contains(78), "\(config)")
        #expect(config.stderr.contains("connection-limit: got \"many\"; allowed: a whole number from 1 to 32"))
        let bus = try BlefleetdBinary.run(common + ["--bus", "unix:path=\(directory.path)/no-bus"])
        #expect(bus.status == 69 && documented.contains(69), "\(bus)")
        try await PrivateBus.with { privateBus in
            let group = try BlefleetdBinary.run(["--config", noGroup.path, "--bus", privateBus.address] + common)
            #expect(group.status == 73 && documented.contains(73), "\(group)")
            #expect(group.stderr.contains("no-such-group-blefleet"))
        }
    }

    @Test("The defaults named are the configuration's")
    func defaults() throws {
        let page = try ManPage("blefleetd.8")
        let defaults = DaemonConfiguration()
        let options = try #require(page.section("OPTIONS")).joined(separator: "\n")
        #expect(options.contains(".Pa \(defaults.socketPath) )"))
        #expect(options.contains(".Pa \(defaults.stateDirectory) )"))
        #expect(options.contains(".Cm \(defaults.adapter) )"))
        #expect(options.contains("(the default"))  // --bus system
        #expect(defaults.bus == "system" && defaults.logTarget == .auto)
        for target in DaemonConfiguration.LogTargetSetting.allCases {
            #expect(page.rendered.contains("--log-target auto | journal | stderr") && options.contains(target.rawValue))
        }
        let files = try #require(page.section("FILES")).joined(separator: "\n")
        #expect(files.contains(".It Pa \(defaults.socketPath)"))
        #expect(files.contains(".It Pa \(defaults.stateDirectory)/boards.json\n"))
        #expect(files.contains(".It Pa \(defaults.stateDirectory)/boards.json.corrupt- Ns Ar timestamp"))
        #expect(files.contains(".It Pa /etc/blefleet/blefleetd.conf"))
        #expect(files.contains(".It Pa /usr/share/blefleet/dbus/zz-blefleet-restrict-bluez.conf"))
    }

    @Test("The journal fields named are the ones the journal handler writes")
    func journalFields() throws {
        let page = try ManPage("blefleetd.8")
        let systemd = try #require(page.section("SYSTEMD")).joined(separator: "\n")
        for field in JournalLogHandler.reservedFields {
            #expect(systemd.contains(".Li \(field)"), "\(field)")
        }
        // Metadata keys the daemon's modules log with, and the field each becomes.
        for key in ["ble.address", "ble.adapter", "rpc.method", "client.uid", "client.pid", "dbus.path", "registry.path"] {
            let field = try #require(JournalLogHandler.fieldName(forMetadataKey: key))
            #expect(systemd.contains(".Li \(field)"), "\(key) → \(field)")
        }
    }

    @Test("The D-Bus policy drop-in is described: what it protects and what it breaks")
    func dbusPolicy() throws {
        let page = try ManPage("blefleetd.8")
        let text = page.rendered
        #expect(text.contains("Restricting BlueZ to the daemon"))
        #expect(text.contains("What it protects:"))
        #expect(text.contains("What it breaks:"))
        #expect(text.contains("ln -s /usr/share/blefleet/dbus/zz-blefleet-restrict-bluez.conf"))
        #expect(text.contains("bluetoothctl(1)"))
    }

    @Test("mandoc -Tlint finds nothing but references to pages not installed")
    func lint() throws {
        #expect(try ManPage("blefleetd.8").lintProblems() == [])
    }
}
