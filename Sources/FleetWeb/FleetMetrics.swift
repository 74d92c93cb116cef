import FleetModel
public import FleetRPC
import Prometheus

/// `GET /metrics`: the fleet in Prometheus' text format, as the daemon tells it at the
/// scrape (one `boards.list`), with swift-prometheus. Names follow Prometheus' practice: a
/// `blefleet_` prefix, base units as suffixes, `_total` for counters. Every per-board series
/// has `board` (its alias, else its name) and `address` (names need not be unique).
public enum FleetMetrics {
    /// A reading a profile may have, and the suffix its metric takes from the unit.
    static let unitSuffixes: [String: String] = [
        "°C": "celsius", "C": "celsius", "celsius": "celsius",
        "%": "percent", "%RH": "percent", "percent": "percent",
        "Pa": "pascals", "hPa": "hectopascals", "V": "volts", "mV": "millivolts", "A": "amperes", "mA": "milliamperes",
        "lx": "lux", "m": "meters", "s": "seconds", "g": "grams", "ppm": "ppm", "dB": "decibels", "dBm": "dbm",
    ]

    /// The names blefleet-web's own metrics take: a sensor whose name would make one of them
    /// is left out (and said so once in the log).
    static let reserved: Set<String> = [
        "blefleet_up", "blefleet_build_info", "blefleet_board_connected", "blefleet_led_on", "blefleet_rssi_dbm",
        "blefleet_reconnects_total", "blefleet_reconnects",
    ]

    /// The metric a sensor's readings go to: `blefleet_<sensor>_<unit>`, the name and unit
    /// made of `[a-z0-9_]`; `nil` when nothing is left of the name.
    public static func metricName(sensor: String, unit: String?) -> String? {
        func clean(_ text: String) -> String {
            var result = ""
            for scalar in text.lowercased().unicodeScalars {
                if ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) {
                    result.unicodeScalars.append(scalar)
                } else if !result.isEmpty && !result.hasSuffix("_") {
                    result += "_"
                }
            }
            while result.hasSuffix("_") { result.removeLast() }
            return result
        }
        let base = clean(sensor)
        guard !base.isEmpty else { return nil }
        let suffix = unit.flatMap { unitSuffixes[$0] ?? (clean($0).isEmpty ? nil : clean($0)) }
        let name = "blefleet_" + base + (suffix.map { base.hasSuffix("_" + $0) || base == $0 ? "" : "_" + $0 } ?? "")
        return reserved.contains(name) ? nil : name
    }

    /// The text of one scrape. `boards` is `nil` when the daemon could not be asked.
    public static func render(boards: [BoardInfo]?, reconnects: [BoardAddress: Int], version: String) -> String {
        let registry = PrometheusCollectorRegistry()
        func gauge(_ name: String, _ help: String, _ labels: [(String, String)]) -> Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
        }
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                metricName: "blefleet_up", unitName: "", helpText: "Whether blefleetd answered this scrape (1) or not (0)."))
            .set(to: boards == nil ? 0.0 : 1.0)
        gauge("blefleet_build_info", "The version of blefleet-web; always 1.", [("version", version)]).set(to: 1.0)

        for board in boards ?? [] {
            let labels = [("board", board.alias ?? board.name), ("address", board.address.rawValue)]
            let connected = [.resolving, .ready, .disconnecting].contains(board.state)
            gauge("blefleet_board_connected", "Whether the board is linked to the gateway now (1) or not (0).", labels)
                .set(to: connected ? 1.0 : 0.0)
            if let led = board.led {
                gauge("blefleet_led_on", "Whether the board's LED is on (1) or off (0), as last written to it.", labels)
                    .set(to: led ? 1.0 : 0.0)
            }
            if let rssi = board.rssi {
                gauge(
                    "blefleet_rssi_dbm", "The board's last signal strength, in dBm, as its adapter heard it.",
                    labels + [("adapter", board.adapter ?? "")]
                ).set(to: Double(rssi))
            }
            registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    metricName: "blefleet_reconnects", unitName: "total",
                    helpText: "Times the board was ready again after losing its link, since blefleet-web started."),
                labels: labels
            ).increment(by: Int64(reconnects[board.address] ?? 0))

            var readings = board.sensors ?? [:]
            if let temperature = board.temperature, readings[TemperatureReading.sensor]?.value == nil {
                readings[TemperatureReading.sensor] = SensorInfo(value: Double(temperature.value.degrees), unit: "°C")
            }
            for (sensor, info) in readings {
                guard let value = info.value, let name = metricName(sensor: sensor, unit: info.unit) else { continue }
                // The help text depends on the name alone (the registry holds one per name).
                gauge(name, "The board's latest reading of its sensor \(name.dropFirst("blefleet_".count)).", labels)
                    .set(to: value)
            }
        }
        return registry.emitToString()
    }
}
