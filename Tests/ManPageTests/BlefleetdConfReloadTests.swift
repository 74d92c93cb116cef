@testable import BlefleetDaemon
import Testing

/// blefleetd.conf(5)'s RELOADING section against what the daemon does on SIGHUP.
@Suite("man/blefleetd.conf.5 reloading")
struct BlefleetdConfReloadTests {
    /// A file that changes every key from its default.
    static let everythingChanged = """
        socket: /tmp/other.sock
        socket-group: other
        read-only-group: other-ro
        state-dir: /tmp/other-state
        adapter: hci1
        bus: unix:path=/tmp/other-bus
        log-target: stderr
        log-level: debug
        connection-limit: 3
        reserved-fleet-slots: 0
        leases-per-user: 1
        subscriptions-per-connection: 2
        connect-timeout-ms: 2000
        auto-adopt: false
        allow: [nano-01]
        default-timeout-ms: 1000
        temperature-max-age-ms: 1
        temperature-refresh-s: 30
        profile-dir: /srv/profiles
        max-frame-bytes: 2048
        max-calls-per-client: 2
        max-connections-per-user: 3
        max-connections: 5
        idle-timeout-s: 0
        max-batch-calls: 8
        max-calls-per-user: 9
        max-calls-in-flight: 10
        reserved-control-calls: 4
        max-queued-notifications: 32
        mqtt: {url: "mqtt://broker.lan", gateway: other}
        history: {raw-days: 5}
        """

    @Test("The keys documented as taking effect on SIGHUP are the ones the daemon does not ask to restart for")
    func reloadableKeys() throws {
        var changed = DaemonConfiguration()
        try changed.apply(text: Self.everythingChanged, source: "test")
        let keys = Set(DaemonConfiguration.fileKeys.map(\.key))
        let setKeys = Set(Self.everythingChanged.split(separator: "\n").map { String($0.split(separator: ":")[0]) })
        #expect(setKeys == keys, "the test's file must change every key")
        let reloadable = keys.subtracting(ReloadService.restartOnlyChanges(from: DaemonConfiguration(), to: changed))

        let page = try ManPage("blefleetd.conf.5")
        let section = try #require(page.section("RELOADING"))
        let named = Set(section.compactMap { line -> String? in
            let words = line.split(separator: " ")
            return words.count >= 2 && words[0] == ".Cm" ? String(words[1]) : nil
        })
        #expect(named == reloadable)
        let entries = try BlefleetdConfManPageTests.entries(page)
        let marked = Set(entries.filter { _, lines in lines.contains(".Dv SIGHUP .") }.keys)
        #expect(marked == reloadable)
    }
}
