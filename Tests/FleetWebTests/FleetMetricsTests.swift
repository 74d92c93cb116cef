import FleetModel
import FleetRPC
import FleetWeb
import Testing

@Suite("blefleet-web's /metrics")
struct FleetMetricsTests {
    @Test("A sensor's metric is named after it and its unit, in Prometheus' characters")
    func names() {
        #expect(FleetMetrics.metricName(sensor: "temperature", unit: "°C") == "blefleet_temperature_celsius")
        #expect(FleetMetrics.metricName(sensor: "humidity", unit: "%") == "blefleet_humidity_percent")
        #expect(FleetMetrics.metricName(sensor: "pressure", unit: "hPa") == "blefleet_pressure_hectopascals")
        #expect(FleetMetrics.metricName(sensor: "CO2 level", unit: "ppm") == "blefleet_co2_level_ppm")
        #expect(FleetMetrics.metricName(sensor: "count", unit: nil) == "blefleet_count")
        #expect(FleetMetrics.metricName(sensor: "light", unit: "µW/cm²") == "blefleet_light_w_cm")
        #expect(FleetMetrics.metricName(sensor: "voltage_volts", unit: "V") == "blefleet_voltage_volts")
        #expect(FleetMetrics.metricName(sensor: "°", unit: nil) == nil)
        // Names of blefleet-web's own metrics are not taken by a sensor.
        #expect(FleetMetrics.metricName(sensor: "rssi", unit: "dBm") == nil)
        #expect(FleetMetrics.metricName(sensor: "up", unit: nil) == nil)
        #expect(FleetMetrics.metricName(sensor: "reconnects", unit: "total") == nil)
    }

    static func board(_ n: Int, name: String, state: BoardPhase, led: Bool?, sensors: [String: SensorInfo]) -> BoardInfo {
        BoardInfo(
            address: BoardAddress("F0:0D:00:00:00:0\(n)")!, name: name, state: state, rssi: -40 - n, led: led,
            adapter: "hci\(n % 2)", profile: "lab", sensors: sensors)
    }

    /// The sample lines of a scrape (no comments), sorted.
    static func samples(_ text: String) -> [String] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init).sorted()
    }

    @Test("Each board's readings, link, LED, signal and reconnects; the daemon up")
    func scrape() {
        let boards = [
            Self.board(1, name: "nano-01", state: .ready, led: true,
                       sensors: ["temperature": SensorInfo(value: 21, unit: "°C"), "humidity": SensorInfo(value: 40.25, unit: "%")]),
            Self.board(2, name: "nano \"2\"", state: .absent, led: nil, sensors: ["temperature": SensorInfo(unit: "°C")]),
        ]
        let text = FleetMetrics.render(boards: boards, reconnects: [boards[0].address: 3], version: "0.1.0")
        let one = "{board=\"nano-01\",address=\"F0:0D:00:00:00:01\"}"
        let two = "{board=\"nano \\\"2\\\"\",address=\"F0:0D:00:00:00:02\"}"
        #expect(Self.samples(text) == [
            "blefleet_board_connected\(one) 1.0",
            "blefleet_board_connected\(two) 0.0",
            "blefleet_build_info{version=\"0.1.0\"} 1.0",
            "blefleet_humidity_percent\(one) 40.25",
            "blefleet_led_on\(one) 1.0",
            "blefleet_reconnects_total\(one) 3",
            "blefleet_reconnects_total\(two) 0",
            "blefleet_rssi_dbm{board=\"nano-01\",address=\"F0:0D:00:00:00:01\",adapter=\"hci1\"} -41.0",
            "blefleet_rssi_dbm{board=\"nano \\\"2\\\"\",address=\"F0:0D:00:00:00:02\",adapter=\"hci0\"} -42.0",
            "blefleet_temperature_celsius\(one) 21.0",
            "blefleet_up 1.0",
        ].sorted())
        #expect(text.contains("# TYPE blefleet_reconnects_total counter"))
        #expect(text.contains("# TYPE blefleet_temperature_celsius gauge"))
    }

    @Test("A daemon that did not answer: blefleet_up 0 and no board")
    func daemonAway() {
        let text = FleetMetrics.render(boards: nil, reconnects: [:], version: "0.1.0")
        #expect(Self.samples(text) == ["blefleet_build_info{version=\"0.1.0\"} 1.0", "blefleet_up 0.0"])
    }

    @Test("Across scrapes: a board gone, renamed, moved or without LED loses its old series; reconnects count up")
    func scrapes() {
        let exporter = FleetMetrics.Exporter(version: "0.1.0")
        var one = Self.board(1, name: "nano-01", state: .ready, led: true, sensors: ["temperature": SensorInfo(value: 21, unit: "°C")])
        let two = Self.board(2, name: "nano-02", state: .ready, led: false, sensors: ["temperature": SensorInfo(value: 22, unit: "°C")])
        _ = exporter.scrape(boards: [one, two], reconnects: [one.address: 1])
        one.alias = "window"
        one.led = nil
        one.adapter = "hci3"
        let text = exporter.scrape(boards: [one], reconnects: [one.address: 3])
        let window = "{board=\"window\",address=\"F0:0D:00:00:00:01\"}"
        #expect(Self.samples(text) == [
            "blefleet_board_connected\(window) 1.0",
            "blefleet_build_info{version=\"0.1.0\"} 1.0",
            "blefleet_reconnects_total\(window) 3",
            "blefleet_rssi_dbm{board=\"window\",address=\"F0:0D:00:00:00:01\",adapter=\"hci3\"} -41.0",
            "blefleet_temperature_celsius\(window) 21.0",
            "blefleet_up 1.0",
        ].sorted())
        let away = exporter.scrape(boards: nil, reconnects: [:])
        #expect(Self.samples(away) == ["blefleet_build_info{version=\"0.1.0\"} 1.0", "blefleet_up 0.0"])
    }
}
