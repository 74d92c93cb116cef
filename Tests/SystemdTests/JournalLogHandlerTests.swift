import Foundation
import Systemd
import Testing

/// The journald handler against a real, private `systemd-journald`.
@Suite struct JournalLogHandlerTests {
    @Test func entriesCarryStructuredFields() async throws {
        let identifier = "probe-\(UUID().uuidString.prefix(8))"
        let result = try await PrivateJournal.run([try Probe.path(), "journal", identifier])
        let output = result.command
        #expect(output.value("target") == "journal")
        let entries = result.entries.filter { $0["SYSLOG_IDENTIFIER"] == identifier }
        try #require(entries.count == 5, "\(result.entries)")

        let info = try #require(entries.first(where: { $0["MESSAGE"] == "Board connected" }))
        #expect(info["PRIORITY"] == "6")
        #expect(info["LOGGER_LABEL"] == "blefleet.probe")
        #expect(info["CODE_FILE"] == "systemd_probe/main.swift")
        #expect(info["CODE_LINE"] == output.value("line.info"))
        #expect(info["CODE_FUNC"] == output.value("function"))
        #expect(info["BLE_ADDRESS"] == "F4:12:FA:6B:01:02")  // logger metadata
        #expect(info["RPC_METHOD"] == "led.set")  // per-message metadata
        #expect(info["CLIENT_UID"] == "1000")  // metadata provider

        let warning = try #require(entries.first(where: { $0["MESSAGE"] == "Odd values" }))
        #expect(warning["PRIORITY"] == "4")
        #expect(warning["CODE_LINE"] == output.value("line.warning"))
        #expect(warning["DUMP"] == "first line\nsecond line")
        #expect(warning["META_MESSAGE"] == "not the message")
        #expect(warning["BAD_KEY"] == "x")

        let error = try #require(entries.first(where: { $0["MESSAGE"] == "Failed" }))
        #expect(error["PRIORITY"] == "3")
        #expect(error["CODE_LINE"] == output.value("line.error"))
        #expect(error["ERROR"] == #"Unknown log target "syslog"; expected one of: auto, journal, stderr."#)

        let debug = try #require(entries.first(where: { $0["MESSAGE"] == "Detail" }))
        #expect(debug["PRIORITY"] == "7")

        let large = try #require(entries.first(where: { $0["MESSAGE"] == "Large" }))
        let blob = try #require(large["BLOB"])
        #expect(blob.utf8.count == 320_000)
        #expect(blob == String(repeating: "0123456789abcdef", count: 20_000), "the 320 kB value differs")
    }

    @Test(arguments: [
        ("ble.address", "BLE_ADDRESS"),
        ("rpc.method", "RPC_METHOD"),
        ("client.uid", "CLIENT_UID"),
        ("rpc.client.uid", "RPC_CLIENT_UID"),
        ("dbus-path", "DBUS_PATH"),
        ("Board Name", "BOARDNAME"),
        ("_private", "PRIVATE"),
        ("1st.try", "ST_TRY"),
        ("temp°C", "TEMPC"),
        ("message", "META_MESSAGE"),
        ("priority", "META_PRIORITY"),
        ("syslog.identifier", "META_SYSLOG_IDENTIFIER"),
        ("code.line", "META_CODE_LINE"),
        ("MESSAGE_ID", "MESSAGE_ID"),
    ])
    func metadataKeyBecomesFieldName(key: String, field: String) {
        #expect(JournalLogHandler.fieldName(forMetadataKey: key) == field)
    }

    @Test func unusableKeysAreDropped() {
        #expect(JournalLogHandler.fieldName(forMetadataKey: "") == nil)
        #expect(JournalLogHandler.fieldName(forMetadataKey: "42") == nil)
        #expect(JournalLogHandler.fieldName(forMetadataKey: "._-") == nil)
        #expect(JournalLogHandler.fieldName(forMetadataKey: "温度") == nil)
    }

    @Test func longKeysAreCutToJournaldsLimit() {
        let field = JournalLogHandler.fieldName(forMetadataKey: String(repeating: "a", count: 100))
        #expect(field == String(repeating: "A", count: 64))
    }
}
