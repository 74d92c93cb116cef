import BlefleetDaemon
import Systemd
import Testing

/// blefleetd(8) against the daemon's options, defaults, journal fields and files.
@Suite("man/blefleetd.8")
struct BlefleetdManPageTests {
    /// The daemon's options (its command line is fixed by the design).
    static let flags = ["--config", "--socket", "--state-dir", "--adapter", "--bus", "--log-target", "--version"]

    @Test("Every option is in the synopsis and has an entry under OPTIONS", arguments: flags)
    func option(flag: String) throws {
        let page = try ManPage("blefleetd.8")
        let macro = "Fl \(flag.dropFirst())"  // mdoc's `Fl -config` prints --config
        let synopsis = try #require(page.section("SYNOPSIS"))
        #expect(synopsis.contains { $0.hasSuffix(macro) || $0.contains(macro + " ") })
        let options = try #require(page.section("OPTIONS"))
        #expect(options.contains { $0 == ".It \(macro)" || $0.hasPrefix(".It \(macro) ") })
        #expect(page.rendered.contains(flag))
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
        #expect(files.contains(".It Pa /etc/dbus-1/system.d/blefleet-bluez-restrict.conf"))
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

    @Test("The exit statuses include success, EX_UNAVAILABLE and EX_CONFIG")
    func exitStatus() throws {
        let page = try ManPage("blefleetd.8")
        let statuses = try #require(page.section("EXIT STATUS")).compactMap { line -> Int? in
            guard line.hasPrefix(".It ") else { return nil }
            return Int(line.dropFirst(4).prefix { $0.isNumber })
        }
        #expect(Set(statuses).isSuperset(of: [0, 69, 78]))
    }

    @Test("The D-Bus policy drop-in is described: what it protects and what it breaks")
    func dbusPolicy() throws {
        let page = try ManPage("blefleetd.8")
        let text = page.rendered
        #expect(text.contains("Restricting BlueZ to the daemon"))
        #expect(text.contains("It protects:"))
        #expect(text.contains("It breaks:"))
        #expect(text.contains("bluetoothctl(1)"))
    }

    @Test("mandoc -Tlint finds nothing but references to pages not installed")
    func lint() throws {
        #expect(try ManPage("blefleetd.8").lintProblems() == [])
    }
}
