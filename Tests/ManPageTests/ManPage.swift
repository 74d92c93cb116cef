import Foundation
import Synchronization
import TestSupport
import Testing

/// One manual page of `man/`, as source (mdoc) and as the text `man` shows.
struct ManPage: Sendable {
    /// The pages in `man/`, by file name.
    static let siblings = ["blectl.1", "blefleetd.8", "blefleetd.conf.5", "blefleet-rpc.7", "blefleet-mqtt.7", "blefleet-profile.5", "blefleet-web.8"]

    /// Pages of other packages the blefleet pages refer to with `.Xr`. `mandoc -Tlint` reports
    /// them when they are not installed (Debian images leave man pages out) or not indexed yet;
    /// those notes say nothing about the page itself. Any other reference fails the lint test,
    /// so a mistyped name is caught.
    static let externalReferences: Set<String> = [
        "bluetoothctl(1)", "dbus-daemon(1)", "journalctl(1)", "sd_notify(3)", "systemd.service(5)",
        "systemd.socket(5)", "bluetoothd(8)", "systemd-journald.service(8)", "mosquitto(8)", "mosquitto_sub(1)",
        "crypt(3)", "mkpasswd(1)",
    ]

    let file: String
    let path: String
    let source: String
    /// Rendered by `mandoc -Tascii` without overstriking, one paragraph per line.
    let rendered: String

    /// Pages rendered so far: each is rendered once per test run, not by every test that
    /// reads it (every `mandoc` holds a thread of the test process until it is done).
    private static let cache = Mutex<[String: ManPage]>([:])

    init(_ file: String) throws {
        if let page = Self.cache.withLock({ $0[file] }) {
            self = page
            return
        }
        self.file = file
        path = repositoryRoot.appendingPathComponent("man/\(file)").path
        source = try String(contentsOfFile: path, encoding: .utf8)
        let raw = try runCommand("/usr/bin/mandoc", ["-Tascii", "-Owidth=1000", path])
        // Bold is "X\bX", underline "_\bX": drop each character followed by a backspace.
        rendered = raw.replacingOccurrences(of: "[^\u{8}]\u{8}", with: "", options: .regularExpression)
        Self.cache.withLock { [self] in $0[file] = self }
    }

    /// The long options an executable's own parser declares, from its
    /// `--experimental-dump-help` output (without `--help` and that option itself).
    static func longOptions(dumpedHelp output: String) throws -> [String] {
        let help = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        let command = try #require(help?["command"] as? [String: Any], "\(output)")
        let arguments = command["arguments"] as? [[String: Any]] ?? []
        return arguments.flatMap { argument in
            (argument["names"] as? [[String: Any]] ?? []).compactMap { name in
                name["kind"] as? String == "long" ? (name["name"] as? String).map { "--" + $0 } : nil
            }
        }.filter { !["--help", "--experimental-dump-help"].contains($0) }
    }

    /// `name(section)`, as the page's `.Dt` names it and as other pages cite it.
    var reference: String { Self.reference(ofFile: file) }

    /// `blefleetd.conf.5` → `blefleetd.conf(5)`.
    static func reference(ofFile file: String) -> String {
        let dot = file.lastIndex(of: ".")!
        return "\(file[..<dot])(\(file[file.index(after: dot)...]))"
    }

    var lines: [Substring] { source.split(separator: "\n", omittingEmptySubsequences: false) }

    /// The source lines from the `.Sh title` line (excluded) to the next `.Sh`.
    func section(_ title: String) -> [Substring]? {
        chunk(startingAt: { $0 == ".Sh \(title)" }, endingAt: { $0.hasPrefix(".Sh ") })
    }

    /// The source lines from the first line `start` accepts (excluded) up to the first later
    /// line `end` accepts (excluded), or to the end of the page.
    func chunk(startingAt start: (Substring) -> Bool, endingAt end: (Substring) -> Bool) -> [Substring]? {
        let lines = self.lines
        guard let first = lines.firstIndex(where: start) else { return nil }
        let rest = lines[(first + 1)...]
        let stop = rest.firstIndex(where: end) ?? lines.endIndex
        return Array(lines[(first + 1)..<stop])
    }

    /// The `literal` displays (`.Bd -literal` … `.Ed`) of a chunk, roff escapes undone.
    static func literalBlocks(_ lines: [Substring]) -> [String] {
        var blocks: [String] = []
        var current: [String]?
        for line in lines {
            if line.hasPrefix(".Bd -literal") {
                current = []
            } else if line == ".Ed", let block = current {
                blocks.append(block.joined(separator: "\n") + "\n")
                current = nil
            } else if current != nil {
                current!.append(unescape(String(line)))
            }
        }
        return blocks
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\(dq", with: "\"")
            .replacingOccurrences(of: "\\&", with: "")
            .replacingOccurrences(of: "\\-", with: "-")
            .replacingOccurrences(of: "\\e", with: "\\")
    }

    /// Every `.Xr name section` in the SEE ALSO section, as `name(section)`.
    var seeAlso: [String] {
        (section("SEE ALSO") ?? []).compactMap { line in
            let words = line.split(separator: " ")
            guard words.count >= 3, words[0] == ".Xr" else { return nil }
            return "\(words[1])(\(words[2]))"
        }
    }

    /// What `mandoc -Tlint` says about the page, minus the notes about referenced pages that
    /// are siblings or ``externalReferences`` (not installed or not indexed here).
    func lintProblems() throws -> [String] {
        let result = try ChildProcess.runBlocking("/usr/bin/mandoc", ["-Tlint", path])
        let text = result.stdout + result.stderr
        let allowed = Set(Self.siblings.map(Self.reference(ofFile:))).union(Self.externalReferences)
        return text.split(separator: "\n").map(String.init).filter { line in
            guard let cited = Self.citedPage(inLintLine: line) else { return true }
            return !allowed.contains(cited)
        }
    }

    /// `name(section)` from "STYLE: referenced manual not found: Xr name section" or
    /// "outdated mandoc.db lacks name(section) entry".
    static func citedPage(inLintLine line: String) -> String? {
        if let range = line.range(of: "STYLE: referenced manual not found: Xr ") {
            let words = line[range.upperBound...].split(separator: " ")
            guard words.count >= 2 else { return nil }
            return "\(words[0])(\(words[1]))"
        }
        if let range = line.range(of: "outdated mandoc.db lacks "), let end = line.range(of: " entry", range: range.upperBound..<line.endIndex) {
            return String(line[range.upperBound..<end.lowerBound])
        }
        return nil
    }
}
