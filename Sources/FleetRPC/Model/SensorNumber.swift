/// How a sensor's value is written for people and for MQTT payloads: the fewest decimals,
/// at most 6, that give the value to a millionth of itself (a float32's 45.669998 is
/// `45.67`; 21.0 is `21`).
public enum SensorNumber {
    /// `value` with exactly `decimals` decimals (as its profile's scale gives it: `1001.0` at
    /// scale 0.1); the fewest that give it (``text(_:)``) when `decimals` is nil.
    public static func text(_ value: Double, decimals: Int?) -> String {
        guard let decimals, (0...9).contains(decimals), value.isFinite, abs(value) < 1e9 else { return text(value) }
        let power = (0..<decimals).reduce(Int64(1)) { power, _ in power * 10 }
        let scaled = (value * Double(power)).rounded()
        let whole = Int64(abs(scaled))
        var text = String(whole / power)
        if decimals > 0 {
            let fraction = String(whole % power)
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return scaled < 0 ? "-" + text : text
    }

    public static func text(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e12 else { return "\(value)" }
        var scale = 1.0
        for decimals in 0...6 {
            let scaled = (value * scale).rounded()
            if abs(scaled / scale - value) <= 1e-6 * max(1, abs(value)) || decimals == 6 {
                let whole = Int64(abs(scaled))
                let unit = Int64(scale)
                var text = String(whole / unit)
                if decimals > 0 {
                    let fraction = String(whole % unit)
                    text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
                }
                return scaled < 0 ? "-" + text : text
            }
            scale *= 10
        }
        return "\(value)"
    }
}
