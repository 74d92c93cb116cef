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
}
