import BlectlCore
import FleetRPC
import Foundation
import Testing

@Suite struct HistoryTextTests {
    let a = BoardAddress("AA:BB:CC:DD:EE:01")!

    @Test func aSparklineGoesFromTheLowestToTheHighestAndAveragesWhatItSqueezes() {
        #expect(HistoryText.sparkline([0, 7, 14], width: 10, unicode: true) == "▁▅█")
        #expect(HistoryText.sparkline([0, 7, 14], width: 10, unicode: false) == "_=#")
        // Eight values in four characters: each the mean of two.
        #expect(HistoryText.sparkline([0, 0, 10, 10, 0, 0, 10, 10], width: 4, unicode: true) == "▁█▁█")
        #expect(HistoryText.sparkline([5, 5, 5], width: 10, unicode: true) == "▄▄▄")
        #expect(HistoryText.sparkline([], width: 10, unicode: true) == "")
        #expect(HistoryText.sparkline(Array(repeating: 1, count: 500), width: 60, unicode: true).count == 60)
    }

    @Test func theLocaleDecidesUnicode() {
        #expect(HistoryText.unicode(environment: ["LANG": "en_GB.UTF-8"]))
        #expect(HistoryText.unicode(environment: ["LANG": "C.utf8"]))
        #expect(!HistoryText.unicode(environment: ["LANG": "C"]))
        #expect(!HistoryText.unicode(environment: [:]))
        #expect(!HistoryText.unicode(environment: ["LC_ALL": "POSIX", "LANG": "en_GB.UTF-8"]))
        #expect(HistoryText.unicode(environment: ["LC_ALL": "", "LC_CTYPE": "de_DE.UTF-8", "LANG": "C"]))
    }

    @Test func spansAndTimesAsAPersonWritesThem() {
        let now = Date(timeIntervalSince1970: 1_795_507_200)
        let nowMilliseconds: Int64 = 1_795_507_200_000
        #expect(HistoryText.time("2h", now: now) == nowMilliseconds - 7_200_000)
        #expect(HistoryText.time("90s", now: now) == nowMilliseconds - 90_000)
        #expect(HistoryText.time(" 7d ", now: now) == nowMilliseconds - 604_800_000)
        #expect(HistoryText.time("1.5h", now: now) == nowMilliseconds - 5_400_000)
        #expect(HistoryText.time("2026-11-24T08:00:00Z", now: now) == 1_795_507_200_000)
        #expect(HistoryText.time("2026-11-24T09:00:00.250+01:00", now: now) == 1_795_507_200_250)
        #expect(HistoryText.time("yesterday", now: now) == nil)
        #expect(HistoryText.time("-2h", now: now) == nil)
        #expect(HistoryText.time("2x", now: now) == nil)
    }

    @Test func csvHasAHeaderAndALinePerPointQuotedWhereNeeded() {
        let result = HistoryResult(
            sensor: "temperature", since: 0, until: 1, resolution: .fiveMinutes,
            series: [
                HistorySeries(
                    address: a, name: "lab, \"north\"", sensor: "temperature",
                    points: [HistoryPoint(time: 1_795_507_200_000, mean: 21.5, min: 21, max: 22, count: 2)])
            ])
        #expect(HistoryText.csv(result) == [
            "address,name,sensor,time,value,min,max,count",
            "AA:BB:CC:DD:EE:01,\"lab, \"\"north\"\"\",temperature,2026-11-24T08:00:00Z,21.5,21,22,2",
        ])
    }

    @Test func theTableGivesEachBoardsFiguresOrSaysNothingIsKept() {
        let result = HistoryResult(
            sensor: "temperature", since: 0, until: 1, resolution: .raw,
            series: [
                HistorySeries(
                    address: a, name: "nano-01", sensor: "temperature",
                    points: [HistoryPoint(time: 1, value: 20), HistoryPoint(time: 2, value: 21), HistoryPoint(time: 3, value: 23)]),
                HistorySeries(address: BoardAddress("AA:BB:CC:DD:EE:02")!, name: "nano-02", sensor: "temperature", points: []),
            ])
        let lines = HistoryText.table(result, trendWidth: 10, unicode: true).render()
        #expect(lines == [
            "NAME     ADDRESS            MIN   MEAN  MAX  LAST  TREND",
            "nano-01  AA:BB:CC:DD:EE:01   20  21.33   23    23  ▁▃█",
            "nano-02  AA:BB:CC:DD:EE:02    -      -    -     -  no readings kept",
        ])
    }

    /// A pressure sensor at scale 0.1: its history as kept (a value from before values were
    /// exact, 1001.3000000000001, among them), told as the daemon tells it.
    @Test func aScaledSensorsHistoryHasItsScalesDecimalsInTheCSVAndTheTable() {
        let kept = HistorySeries(
            address: a, name: "nano-01", sensor: "pressure",
            points: [
                HistoryPoint(time: 1_795_507_200_000, value: 1001.0), HistoryPoint(time: 1_795_507_201_000, value: 1001.3000000000001),
                HistoryPoint(time: 1_795_507_202_000, value: 1001.4),
            ])
        let told = kept.told(withDecimals: 1)
        #expect(told.points.map(\.mean) == [1001.0, 1001.3, 1001.4])
        #expect(told.summary?.mean == 1001.23)
        let raw = HistoryResult(sensor: "pressure", since: 0, until: 1, resolution: .raw, series: [told])
        #expect(HistoryText.csv(raw) == [
            "address,name,sensor,time,value,min,max,count",
            "AA:BB:CC:DD:EE:01,nano-01,pressure,2026-11-24T08:00:00Z,1001.0,1001.0,1001.0,1",
            "AA:BB:CC:DD:EE:01,nano-01,pressure,2026-11-24T08:00:01Z,1001.3,1001.3,1001.3,1",
            "AA:BB:CC:DD:EE:01,nano-01,pressure,2026-11-24T08:00:02Z,1001.4,1001.4,1001.4,1",
        ])
        #expect(HistoryText.table(raw, trendWidth: 10, unicode: false).render() == [
            "NAME     ADDRESS               MIN     MEAN     MAX    LAST  TREND",
            "nano-01  AA:BB:CC:DD:EE:01  1001.0  1001.23  1001.4  1001.4  _+#",
        ])
        // A 5-minute bucket: its mean has one decimal more than its readings.
        let bucket = HistorySeries(
            address: a, name: "nano-01", sensor: "pressure",
            points: [HistoryPoint(time: 1_795_507_200_000, mean: 2002.7 / 2, min: 1001.3000000000001, max: 1001.4, count: 2)]
        ).told(withDecimals: 1)
        #expect(HistoryText.csv(HistoryResult(sensor: "pressure", since: 0, until: 1, resolution: .fiveMinutes, series: [bucket])).last
            == "AA:BB:CC:DD:EE:01,nano-01,pressure,2026-11-24T08:00:00Z,1001.35,1001.3,1001.4,2")
        // A float sensor's series is left as kept.
        #expect(kept.told(withDecimals: nil) == kept)
    }

    @Test func theDecimalsCrossTheWire() throws {
        let series = HistorySeries(
            address: a, name: "nano-01", sensor: "pressure", points: [HistoryPoint(time: 1_795_507_200_000, value: 1001.3)], decimals: 1)
        let result = HistoryResult(sensor: "pressure", since: 0, until: 1_795_507_200_000, resolution: .raw, series: [series])
        let data = try JSONEncoder().encode(result)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"decimals\":1"))
        #expect(text.contains("\"value\":1001.3"))
        #expect(try JSONDecoder().decode(HistoryResult.self, from: data).series.first?.decimals == 1)
    }
}
