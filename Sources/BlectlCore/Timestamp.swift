#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// Wall-clock times as the wire carries them (ISO 8601 UTC) and as blectl shows them.
public enum Timestamp {
    /// Seconds since the epoch, now.
    public static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`; `nil` for anything
    /// else. Foundation's ISO 8601 parser, with and without fractional seconds.
    public static func parse(_ text: String) -> Double? {
        for style in [plain, fractional] {
            // The whole text: the parser alone accepts trailing junk.
            if let (end, date) = try? style.consuming(text, startingAt: text.startIndex, in: text.startIndex..<text.endIndex),
                end == text.endIndex
            {
                return date.timeIntervalSince1970
            }
        }
        return nil
    }

    private static let plain = Date.ISO8601FormatStyle()
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// `2024-05-01T12:00:00Z` for a time in seconds since the epoch.
    public static func iso8601(_ epoch: Double) -> String {
        Date(timeIntervalSince1970: epoch.rounded(.down)).formatted(plain)
    }

    /// `HH:MM:SS` in local time.
    public static func clock(_ epoch: Double) -> String {
        var seconds = time_t(epoch.rounded(.down))
        var parts = tm()
        localtime_r(&seconds, &parts)
        return "\(pad(Int(parts.tm_hour))):\(pad(Int(parts.tm_min))):\(pad(Int(parts.tm_sec)))"
    }

    static func pad(_ value: Int, _ width: Int = 2) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(width - text.count, 0)) + text
    }
}
