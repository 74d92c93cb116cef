import Foundation
import TestSupport
import Testing

/// What `blectl` loads: its start is most of a call's time (issue 22), so it links only what
/// every call needs, and `--broker` loads libmosquitto when it is used.
@Suite("blectl loads only what a call needs")
struct BlectlLoadingTests {
    @Test("ldd: no full Foundation, no ICU, no libmosquitto, libssl or libcrypto")
    func sharedLibraries() throws {
        let listing = try runCommand("/usr/bin/ldd", [try Blectl.path()])
        let names = listing.split(separator: "\n").compactMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
        #expect(names.contains { $0.hasPrefix("libswiftCore.so") }, "\(listing)")
        for unwanted in [
            "libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so",
            "libmosquitto.so", "libssl.so", "libcrypto.so",
        ] {
            #expect(!names.contains { $0.hasPrefix(unwanted) }, "blectl loads \(unwanted) at start:\n\(listing)")
        }
    }

    @Test("Without libmosquitto: --broker says what to install and exits 69; other calls work")
    func withoutLibmosquitto() async throws {
        let hidden = try HiddenLibrary.prefix(hiding: "libmosquitto.so.1")

        let version = try await Blectl.run(["--version"], prefix: hidden)
        #expect(version.status == 0, "\(version)")
        #expect(!version.stdout.isEmpty)

        let broker = try await Blectl.run(["--broker", "mqtt://127.0.0.1:1", "temp"], prefix: hidden)
        #expect(broker.status == 69, "\(broker)")
        #expect(broker.stdout.isEmpty)
        #expect(broker.stderr.hasPrefix("blectl --broker needs libmosquitto1: apt install libmosquitto1\n"), "\(broker)")
        #expect(broker.stderr.contains("libmosquitto.so.1"), "\(broker)")
    }
}
