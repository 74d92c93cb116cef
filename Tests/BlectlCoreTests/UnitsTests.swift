import BlectlCore
import Testing

@Suite struct UnitsTests {
    @Test("Temperatures carry their sign", arguments: [(21, "21 °C"), (-5, "-5 °C"), (0, "0 °C"), (-128, "-128 °C"), (127, "127 °C")])
    func celsius(value: Int, text: String) {
        #expect(Units.celsius(value) == text)
    }

    @Test("A reading shows the decimals its profile's scale gives it, else the fewest that give it", arguments: [
        (1001.0, "hPa", 1, "1001.0 hPa"), (1001.3, "hPa", 1, "1001.3 hPa"), (-0.5, nil, 2, "-0.50"), (21.0, "°C", 0, "21 °C"),
        (45.669998, "%", nil, "45.67 %"), (-2.0, "°C", nil, "-2 °C"), (0.04, "%", 1, "0.0 %"),
    ] as [(Double, String?, Int?, String)])
    func readings(value: Double, unit: String?, decimals: Int?, text: String) {
        #expect(Units.reading(value, unit: unit, decimals: decimals) == text)
    }

    @Test("Ages read as a person says them", arguments: [
        (0, "0 s ago"), (999, "0 s ago"), (3_000, "3 s ago"), (59_999, "59 s ago"), (60_000, "1 min ago"),
        (3_599_000, "59 min ago"), (3_600_000, "1 h ago"), (47 * 3_600_000, "47 h ago"), (3 * 86_400_000, "3 d ago"),
        (-500, "0 s ago"),
    ])
    func age(milliseconds: Int, text: String) {
        #expect(Units.age(milliseconds: milliseconds) == text)
    }

    @Test("Summary lines count ok boards of all, and failures only when there are some")
    func summary() {
        #expect(Units.summary(ok: 12, failed: 0, verb: "on") == "12/12 boards on")
        #expect(Units.summary(ok: 11, failed: 1, verb: "on") == "11/12 boards on, 1 failed")
        #expect(Units.summary(ok: 0, failed: 3, verb: "connected") == "0/3 boards connected, 3 failed")
        #expect(Units.summary(ok: 1, failed: 0, verb: "read") == "1/1 board read")
    }

    @Test("Latencies and uptimes")
    func durations() {
        #expect(Units.latency(milliseconds: 83) == "83 ms")
        #expect(Units.latency(milliseconds: 1_234) == "1.2 s")
        #expect(Units.span(seconds: 42.9) == "42 s")
        #expect(Units.span(seconds: 3723.5) == "1 h 2 min")
        #expect(Units.span(seconds: 90_000) == "1 d 1 h")
    }
}
