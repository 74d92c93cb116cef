#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where log entries go: `--log-target auto|journal|stderr`.
public enum LogTarget: String, Sendable, CaseIterable, CustomStringConvertible {
    /// journald when standard error is connected to it (systemd service), else standard error.
    case auto
    /// Structured entries through `sd_journal_sendv` (``JournalLogHandler``).
    case journal
    /// Readable lines on standard error (``StderrLogHandler``).
    case stderr

    /// Parses `auto`, `journal` or `stderr` (surrounding blanks and letter case ignored).
    public init(parsing text: String) throws {
        let trimmed = text.trimmingBlanks().lowercased()
        guard let target = LogTarget(rawValue: trimmed) else {
            throw SystemdError.unknownLogTarget(text)
        }
        self = target
    }

    public var description: String { rawValue }

    /// The concrete target: `.journal` or `.stderr`. `.auto` becomes `.journal` only when
    /// `JOURNAL_STREAM` is set and names the device and inode of `standardError`, as
    /// `systemd.exec(5)` prescribes (a mere `JOURNAL_STREAM` may be inherited by a process
    /// whose standard error was redirected elsewhere).
    ///
    /// - Parameters:
    ///   - environment: the variables to consult; `nil` reads the process environment.
    ///   - standardError: the descriptor to compare with `JOURNAL_STREAM`.
    public func resolved(environment: [String: String]? = nil, standardError: Int32 = 2) -> LogTarget {
        switch self {
        case .journal, .stderr:
            return self
        case .auto:
            let stream: String?
            if let environment {
                stream = environment["JOURNAL_STREAM"]
            } else {
                stream = getenv("JOURNAL_STREAM").map { String(cString: $0) }
            }
            return Self.journalStream(stream, matches: standardError) ? .journal : .stderr
        }
    }

    /// Whether `value` (`JOURNAL_STREAM`, `"<device>:<inode>"` in decimal) names the file
    /// open on `fileDescriptor`.
    static func journalStream(_ value: String?, matches fileDescriptor: Int32) -> Bool {
        guard let value else { return false }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else {
            return false
        }
        var info = stat()
        guard fstat(fileDescriptor, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }
}

extension String {
    fileprivate func trimmingBlanks() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[first...last])
    }
}
