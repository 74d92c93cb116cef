import FleetRPC

/// Formats of the numbers blectl shows: temperatures, ages, latencies, summaries.
public enum Units {
    /// Whole degrees Celsius with the sign: `21 °C`, `-5 °C`, `0 °C`. Right-align in a
    /// column so the digits line up.
    public static func celsius(_ value: Int) -> String {
        "\(value) °C"
    }

    /// How long ago something happened: `0 s ago`, `3 s ago`, `2 min ago`, `5 h ago`, `3 d ago`.
    /// A sensor value with its unit: `45.67 %`, `21 °C`, `-0.5`, `1001.0 hPa` with the
    /// decimals its profile's scale gives it (``SensorNumber``).
    public static func reading(_ value: Double, unit: String?, decimals: Int? = nil) -> String {
        let text = SensorNumber.text(value, decimals: decimals)
        guard let unit, !unit.isEmpty else { return text }
        return "\(text) \(unit)"
    }

    public static func age(milliseconds: Int) -> String {
        let seconds = max(milliseconds, 0) / 1000
        if seconds < 60 { return "\(seconds) s ago" }
        if seconds < 3600 { return "\(seconds / 60) min ago" }
        if seconds < 48 * 3600 { return "\(seconds / 3600) h ago" }
        return "\(seconds / 86400) d ago"
    }

    /// A duration in milliseconds: `83 ms`, `1.2 s`.
    public static func latency(_ duration: Duration) -> String {
        latency(milliseconds: duration.wholeMilliseconds)
    }

    public static func latency(milliseconds: Int) -> String {
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        let tenths = (milliseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }

    /// A time span in seconds, for uptimes: `42 s`, `3 min 5 s`, `2 h 10 min`, `4 d 3 h`.
    public static func span(seconds value: Double) -> String {
        let seconds = Int(max(value, 0))
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        if seconds < 86400 { return "\(seconds / 3600) h \(seconds % 3600 / 60) min" }
        return "\(seconds / 86400) d \(seconds % 86400 / 3600) h"
    }

    /// The summary line of a fleet-wide command: `12/12 boards on`, `11/12 boards on, 1 failed`,
    /// `11/12 boards on, 1 pending` (`pending` of the `failed` keep the change for later).
    public static func summary(ok: Int, failed: Int, pending: Int = 0, verb: String) -> String {
        let total = ok + failed
        let noun = total == 1 ? "board" : "boards"
        var text = "\(ok)/\(total) \(noun) \(verb)"
        if failed - pending > 0 { text += ", \(failed - pending) failed" }
        if pending > 0 { text += ", \(pending) pending (switched \(verb) when back)" }
        return text
    }
}
