import Foundation
import Systemd
import Testing
import TestSupport

@Suite struct LogTargetTests {
    @Test func parsesTheThreeTargets() throws {
        #expect(try LogTarget(parsing: "auto") == .auto)
        #expect(try LogTarget(parsing: " Journal ") == .journal)
        #expect(try LogTarget(parsing: "stderr") == .stderr)
    }

    @Test func rejectsOthersWithASentence() {
        #expect(throws: SystemdError.unknownLogTarget("syslog")) { try LogTarget(parsing: "syslog") }
        #expect(
            SystemdError.unknownLogTarget("syslog").description
                == #"Unknown log target "syslog"; expected one of: auto, journal, stderr."#)
    }

    /// A file standing in for standard error, and its `JOURNAL_STREAM` value.
    func withFile(_ body: (Int32, String) throws -> Void) throws {
        let directory = try makeTemporaryDirectory(prefix: "logtarget")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("stderr").path
        let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FixtureError("open failed: errno \(errno)") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FixtureError("fstat failed: errno \(errno)") }
        try body(fd, "\(info.st_dev):\(info.st_ino)")
    }

    @Test func autoPicksJournalWhenStandardErrorIsTheJournalStream() throws {
        try withFile { fd, stream in
            #expect(LogTarget.auto.resolved(environment: ["JOURNAL_STREAM": stream], standardError: fd) == .journal)
        }
    }

    @Test func autoPicksStderrOtherwise() throws {
        try withFile { fd, stream in
            // Not under journald at all.
            #expect(LogTarget.auto.resolved(environment: [:], standardError: fd) == .stderr)
            // Inherited JOURNAL_STREAM, but standard error was redirected elsewhere.
            let inode = stream.split(separator: ":")[1]
            let device = stream.split(separator: ":")[0]
            #expect(
                LogTarget.auto.resolved(environment: ["JOURNAL_STREAM": "\(device):\(UInt64(inode)! + 1)"], standardError: fd)
                    == .stderr)
            #expect(LogTarget.auto.resolved(environment: ["JOURNAL_STREAM": "garbage"], standardError: fd) == .stderr)
            #expect(LogTarget.auto.resolved(environment: ["JOURNAL_STREAM": stream], standardError: -1) == .stderr)
        }
    }

    @Test func explicitTargetsStay() throws {
        try withFile { fd, stream in
            #expect(LogTarget.stderr.resolved(environment: ["JOURNAL_STREAM": stream], standardError: fd) == .stderr)
            #expect(LogTarget.journal.resolved(environment: [:], standardError: fd) == .journal)
        }
    }
}
