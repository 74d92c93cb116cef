import Foundation
import TestSupport

/// Runs a command next to a private `systemd-journald` and returns the entries it stored.
///
/// Everything happens in fresh user, mount and PID namespaces (`unshare -Urm --pid`): a tmpfs
/// over `/run` gives journald its own sockets, a temporary directory is bound onto
/// `/var/log/journal`, and when the command is done `journalctl --flush` moves the entries
/// there. The namespace's processes die with it; the host journal is never touched.
enum PrivateJournal {
    private static let script = #"""
        set -eu
        dir="$1"; shift
        mount -t tmpfs tmpfs /run
        if [ ! -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log; mkdir /var/log/journal; fi
        mount --bind "$dir" /var/log/journal
        mkdir -p /run/systemd/journal /run/log
        /lib/systemd/systemd-journald &
        journald=$!
        trap 'kill $journald 2>/dev/null; wait $journald 2>/dev/null || true' EXIT
        i=0
        while [ ! -S /run/systemd/journal/socket ] || [ ! -S /run/systemd/journal/io.systemd.journal ]; do
            i=$((i + 1))
            if [ $i -gt 500 ]; then echo "systemd-journald did not create its sockets within 10 s" >&2; exit 1; fi
            sleep 0.02
        done
        "$@"
        journalctl --flush
        """#

    struct Result {
        let command: ProcessOutput
        let entries: [[String: String]]
    }

    static func run(_ command: [String]) async throws -> Result {
        let directory = try makeTemporaryDirectory(prefix: "journal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = try await runProcess(
            "/usr/bin/unshare",
            ["-Urm", "--pid", "--fork", "--kill-child", "--mount-proc", "/bin/sh", "-c", script, "sh", directory.path]
                + command,
            environment: Probe.environment(), timeout: .seconds(30))
        guard output.status == 0 else {
            throw FixtureError("private journald run failed (\(output.status)): \(output.stderr)")
        }
        let json = try runCommand("/usr/bin/journalctl", ["-D", directory.path, "-o", "json", "--all", "--no-pager"])
        let entries = try json.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            guard let fields = object as? [String: Any] else { throw FixtureError("not a journal entry: \(line)") }
            return fields.compactMapValues(text)
        }
        return Result(command: output, entries: entries)
    }

    /// journalctl (with `--all`, else long fields are `null`) prints a field as a string, as an array of byte values when it is not
    /// printable UTF-8, or as an array of those when the field repeats.
    private static func text(_ value: Any) -> String? {
        if let string = value as? String { return string }
        if let bytes = value as? [Int] { return String(decoding: bytes.map { UInt8(truncatingIfNeeded: $0) }, as: UTF8.self) }
        if let values = value as? [Any] { return values.compactMap(text).joined(separator: "\u{0}") }
        return nil
    }
}
