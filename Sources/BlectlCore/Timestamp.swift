#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock times as the wire carries them (ISO 8601 UTC) and as blectl shows them.
public enum Timestamp {
    /// Seconds since the epoch, now.
    public static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`; `nil` for anything else.
    public static func parse(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 45, bytes[7] == 45, bytes[10] == 84 || bytes[10] == 116 || bytes[10] == 32,
            bytes[13] == 58, bytes[16] == 58,
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var position = 19
        var fraction = 0.0
        if bytes[position] == 46 {
            position += 1
            var scale = 0.1
            let start = position
            while position < bytes.count, bytes[position] >= 48 && bytes[position] <= 57 {
                fraction += Double(bytes[position] - 48) * scale
                scale /= 10
                position += 1
            }
            guard position > start else { return nil }
        }
        var offset = 0
        guard position < bytes.count else { return nil }
        switch bytes[position] {
        case 90, 122:  // Z
            guard position + 1 == bytes.count else { return nil }
        case 43, 45:  // + -
            guard position + 6 == bytes.count, bytes[position + 3] == 58,
                let hours = number(position + 1..<position + 3), let minutes = number(position + 4..<position + 6)
            else { return nil }
            offset = (hours * 3600 + minutes * 60) * (bytes[position] == 45 ? -1 : 1)
        default:
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Double(timegm(&parts) - offset) + fraction
    }

    /// `2024-05-01T12:00:00Z` for a time in seconds since the epoch.
    public static func iso8601(_ epoch: Double) -> String {
        var seconds = time_t(epoch.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1))-\(pad(Int(parts.tm_mday)))"
            + "T\(pad(Int(parts.tm_hour))):\(pad(Int(parts.tm_min))):\(pad(Int(parts.tm_sec)))Z"
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
