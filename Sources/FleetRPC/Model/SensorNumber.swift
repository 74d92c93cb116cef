/// How a sensor's value is written for people and for MQTT payloads: the fewest decimals,
/// at most 6, that give the value to a millionth of itself (a float32's 45.669998 is
/// `45.67`; 21.0 is `21`).
public enum SensorNumber {
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
