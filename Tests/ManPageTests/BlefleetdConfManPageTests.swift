import BlefleetDaemon
import Foundation
import Testing

/// blefleetd.conf(5) against the keys, allowed values and defaults the daemon's parser has.
@Suite("man/blefleetd.conf.5")
struct BlefleetdConfManPageTests {
    static let keys = DaemonConfiguration.fileKeys.map(\.key)

    /// Each `.It Cm key : …` entry of SETTINGS, up to the next entry or list end.
    static func entries(_ page: ManPage) throws -> [String: [Substring]] {
        let settings = try #require(page.section("SETTINGS"))
        var entries: [String: [Substring]] = [:]
        var current: String?
        for line in settings {
            let words = line.split(separator: " ")
            if words.count >= 4, words[0] == ".It", words[1] == "Cm", words[3] == ":" {
                current = String(words[2])
                entries[current!] = []
            } else if line == ".El" || line.hasPrefix(".Ss ") {
                current = nil
            } else if let key = current {
                entries[key]!.append(line)
            }
        }
        return entries
    }

    /// The value after "Default:" in an entry, on the same line or as the next macro line.
    static func documentedDefault(_ entry: [Substring]) -> String? {
        guard let index = entry.firstIndex(where: { $0.contains("Default:") }) else { return nil }
        let rest = entry[index].components(separatedBy: "Default:")[1].trimmingCharacters(in: .whitespaces)
        let text = rest.isEmpty && index + 1 < entry.endIndex ? String(entry[index + 1]) : rest
        let words = text.split(separator: " ").filter { !$0.hasPrefix(".") }
        // A mapping, written whole: `{key: value, ...}`.
        if words.first?.hasPrefix("{") == true, let end = words.firstIndex(where: { $0.hasSuffix("}") }) {
            return words[...end].joined(separator: " ")
        }
        return words.first.map { $0.hasSuffix(".") ? String($0.dropLast()) : String($0) }
    }

    /// The example files of EXAMPLES.
    static func examples(_ page: ManPage) throws -> [String] {
        ManPage.literalBlocks(try #require(page.section("EXAMPLES")))
    }

    @Test("Every key the parser accepts has an entry, and every entry is a key")
    func everyKeyIsDocumented() throws {
        let entries = try Self.entries(try ManPage("blefleetd.conf.5"))
        #expect(Set(entries.keys) == Set(Self.keys))
    }

    @Test("Each entry states the range or the words the parser allows", arguments: DaemonConfiguration.fileKeys.map(\.key))
    func allowedValues(key: String) throws {
        let allowed = try #require(DaemonConfiguration.fileKeys.first { $0.key == key }).allowed
        let entry = try #require(try Self.entries(try ManPage("blefleetd.conf.5"))[key]).joined(separator: " ")
        if let range = allowed.range(of: #"from [0-9]+ to [0-9]+"#, options: .regularExpression) {
            #expect(entry.contains(allowed[range].dropFirst(5)), "\(key) allows \(allowed)")
        } else if allowed.range(of: #"^[a-z]+(, [a-z]+)* or [a-z]+$"#, options: .regularExpression) != nil {
            for word in allowed.replacingOccurrences(of: " or ", with: ", ").components(separatedBy: ", ") {
                #expect(entry.contains(word), "\(key) allows \(word)")
            }
        }
    }

    @Test("The first example states every key with the parser's default, which the entries document")
    func defaultsExample() throws {
        let page = try ManPage("blefleetd.conf.5")
        let example = try #require(try Self.examples(page).first)
        var parsed = DaemonConfiguration()
        try parsed.apply(text: example, source: "blefleetd.conf(5) example")
        #expect(parsed == DaemonConfiguration())
        let values = Dictionary(
            uniqueKeysWithValues: example.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
                let parts = line.split(separator: ":", maxSplits: 1)
                return (String(parts[0]), parts[1].trimmingCharacters(in: .whitespaces))
            })
        #expect(Set(values.keys) == Set(Self.keys))
        let entries = try Self.entries(page)
        for key in Self.keys {
            let documented = Self.documentedDefault(entries[key] ?? [])
            let spelled = ["empty": "[]", "none": "\"\""][documented ?? ""] ?? documented
            #expect(spelled == values[key], "\(key): the entry says \(documented ?? "nothing"), the example \(values[key] ?? "nothing")")
        }
    }

    @Test("Every example file is one the daemon accepts")
    func examplesParse() throws {
        let examples = try Self.examples(try ManPage("blefleetd.conf.5"))
        #expect(examples.count >= 2)
        for example in examples {
            var config = DaemonConfiguration()
            #expect(throws: Never.self, "\(example)") { try config.apply(text: example, source: "example") }
        }
    }

    @Test("The error messages shown are the parser's own")
    func errorMessages() throws {
        let page = try ManPage("blefleetd.conf.5")
        let shown = ManPage.literalBlocks(try #require(page.section("DESCRIPTION")))
            .map { $0.replacingOccurrences(of: "\n", with: " ").trimmingCharacters(in: .whitespaces) }
        let path = "/etc/blefleet/blefleetd.conf"
        var config = DaemonConfiguration()
        let badValue = "# comment\n\n\nconnection-limit: many\n"
        #expect { try config.apply(text: badValue, source: path) } throws: { error in
            shown.contains(String(describing: error))
        }
        let unknownKey = "\nadaptor: hci0\n"
        #expect { try config.apply(text: unknownKey, source: path) } throws: { error in
            let message = String(describing: error)
            return shown.contains { $0.hasSuffix("...") && message.hasPrefix($0.dropLast(3)) }
        }
    }

    @Test("The limits blefleet-rpc(7) quotes are these defaults")
    func limitsInTheProtocolPage() throws {
        let rpc = try ManPage("blefleet-rpc.7")
        let defaults = DaemonConfiguration()
        for (key, value) in [
            ("max-frame-bytes", defaults.maxFrameBytes), ("max-calls-per-client", defaults.maxCallsPerClient),
            ("max-connections-per-user", defaults.maxConnectionsPerUser),
            ("max-queued-notifications", defaults.maxQueuedNotifications),
        ] {
            #expect(rpc.source.contains(".It Cm \(key) Pq default \(value)\n"), "\(key)")
        }
    }

    @Test("mandoc -Tlint finds nothing but references to pages not installed")
    func lint() throws {
        #expect(try ManPage("blefleetd.conf.5").lintProblems() == [])
    }
}
