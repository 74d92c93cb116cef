import FleetModel
public import FleetRPC
import Prometheus
import Synchronization

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

    /// The text of one scrape with a registry of its own (``Exporter`` keeps one across scrapes).
    public static func render(boards: [BoardInfo]?, reconnects: [BoardAddress: Int], version: String) -> String {
        Exporter(version: version).scrape(boards: boards, reconnects: reconnects)
    }

    /// blefleet-web's metrics across scrapes: one swift-prometheus registry whose series are
    /// made once per board and set at each scrape; a board that is gone, or whose labels
    /// changed (an alias, another adapter), loses its old series.
    public final class Exporter: Sendable {
        let registry = PrometheusCollectorRegistry()
        let up: Gauge
        private let boards = Mutex<[BoardAddress: BoardSeries]>([:])

        /// The series of one board, with the labels they were made with.
        struct BoardSeries {
            var labels: [(String, String)]
            var adapter: String?
            var connected: Gauge
            var led: Gauge?
            var rssi: Gauge?
            var reconnects: Counter
            var reconnectsCounted: Int = 0
            var readings: [String: Gauge] = [:]
        }

        public init(version: String) {
            up = registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    metricName: "blefleet_up", unitName: "", helpText: "Whether blefleetd answered this scrape (1) or not (0)."))
            gauge("blefleet_build_info", "The version of blefleet-web; always 1.", [("version", version)]).set(to: 1.0)
        }

        func gauge(_ name: String, _ help: String, _ labels: [(String, String)]) -> Gauge {
            registry.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
        }

        func makeSeries(_ labels: [(String, String)]) -> BoardSeries {
            BoardSeries(
                labels: labels,
                connected: gauge("blefleet_board_connected", "Whether the board is linked to the gateway now (1) or not (0).", labels),
                reconnects: registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        metricName: "blefleet_reconnects", unitName: "total",
                        helpText: "Times the board was ready again after losing its link, since blefleet-web started."),
                    labels: labels))
        }

        func remove(_ series: BoardSeries) {
            registry.unregisterGauge(series.connected)
            registry.unregisterCounter(series.reconnects)
            series.led.map(registry.unregisterGauge)
            series.rssi.map(registry.unregisterGauge)
            series.readings.values.forEach(registry.unregisterGauge)
        }

        /// Sets every series from `boards` (`nil`: the daemon did not answer) and returns the text.
        public func scrape(boards list: [BoardInfo]?, reconnects: [BoardAddress: Int]) -> String {
            boards.withLock { known in
                up.set(to: list == nil ? 0.0 : 1.0)
                var seen = Set<BoardAddress>()
                for board in list ?? [] {
                    seen.insert(board.address)
                    update(&known, board, reconnects: reconnects[board.address] ?? 0)
                }
                for (address, series) in known where !seen.contains(address) {
                    remove(series)
                    known[address] = nil
                }
                return registry.emitToString()
            }
        }

        private func update(_ known: inout [BoardAddress: BoardSeries], _ board: BoardInfo, reconnects: Int) {
            let labels = [("board", board.alias ?? board.name), ("address", board.address.rawValue)]
            var series: BoardSeries
            if let old = known[board.address], old.labels.elementsEqual(labels, by: ==) {
                series = old
            } else {
                known[board.address].map(remove)
                series = makeSeries(labels)
            }
            let connected = [.resolving, .ready, .disconnecting].contains(board.state)
            series.connected.set(to: connected ? 1.0 : 0.0)
            if let led = board.led {
                if series.led == nil {
                    series.led = gauge(
                        "blefleet_led_on", "Whether the board's LED is on (1) or off (0), as last written to it.", labels)
                }
                series.led?.set(to: led ? 1.0 : 0.0)
            } else if let gone = series.led {
                registry.unregisterGauge(gone)
                series.led = nil
            }
            if let rssi = board.rssi {
                if series.rssi == nil || series.adapter != board.adapter {
                    series.rssi.map(registry.unregisterGauge)
                    series.rssi = gauge(
                        "blefleet_rssi_dbm", "The board's last signal strength, in dBm, as its adapter heard it.",
                        labels + [("adapter", board.adapter ?? "")])
                    series.adapter = board.adapter
                }
                series.rssi?.set(to: Double(rssi))
            } else if let gone = series.rssi {
                registry.unregisterGauge(gone)
                series.rssi = nil
            }
            if reconnects > series.reconnectsCounted {
                series.reconnects.increment(by: Int64(reconnects - series.reconnectsCounted))
                series.reconnectsCounted = reconnects
            }

            var readings = board.sensors ?? [:]
            if let temperature = board.temperature, readings[TemperatureReading.sensor]?.value == nil {
                readings[TemperatureReading.sensor] = SensorInfo(value: Double(temperature.value.degrees), unit: "°C")
            }
            var names = Set<String>()
            for (sensor, info) in readings {
                guard let value = info.value, let name = metricName(sensor: sensor, unit: info.unit) else { continue }
                names.insert(name)
                if series.readings[name] == nil {
                    // The help text depends on the name alone (the registry holds one per name).
                    series.readings[name] = gauge(
                        name, "The board's latest reading of its sensor \(name.dropFirst("blefleet_".count)).", labels)
                }
                series.readings[name]?.set(to: value)
            }
            for (name, gauge) in series.readings where !names.contains(name) {
                registry.unregisterGauge(gauge)
                series.readings[name] = nil
            }
            known[board.address] = series
        }
    }
}
