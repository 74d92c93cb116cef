import FleetHistory
import FleetModel
import Foundation
import Logging
import Testing
import TestSupport

/// The history store on a real SQLite file in a temporary directory.
@Suite struct HistoryStoreTests {
    let directory: String
    let board = BoardAddress("AA:BB:CC:DD:EE:01")!
    let other = BoardAddress("AA:BB:CC:DD:EE:02")!
    /// 2026-11-24T08:00:00Z, a bucket boundary of both widths.
    let morning = Date(timeIntervalSince1970: 1_795_507_200)

    init() throws {
        directory = NSTemporaryDirectory() + "history-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func settings(_ change: (inout HistorySettings) -> Void = { _ in }) -> HistorySettings {
        var settings = HistorySettings(path: directory + "/history.sqlite3")
        change(&settings)
        return settings
    }

    /// Runs `body` with a store opened on `settings`, and closes it after, whatever happens
    /// (SQLiteNIO stops a process that drops a connection unclosed).
    func withStore<T>(_ settings: HistorySettings? = nil, _ body: (HistoryStore) async throws -> T) async throws -> T {
        let store = HistoryStore(settings: settings ?? self.settings(), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        await store.open()
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }

    func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }

    @Test func readingsComeBackAsRecordedAndBucketsAgreeWithHandComputedFigures() async throws {
        try await withStore { store in
            #expect(store.state == .on)
            // Two 5-minute buckets in the first hour, one in the next; values chosen by hand.
            let readings: [(seconds: Double, value: Double)] = [
                (0, 20), (60, 22), (299.999, 27),  // 08:00 bucket: mean 23, min 20, max 27
                (300, 19), (599, 21),  // 08:05 bucket: mean 20, min 19, max 21
                (3600, -5), (3900, 5),  // 09:00 and 09:05 buckets
            ]
            for reading in readings {
                store.record(board, sensor: "temperature", value: reading.value, at: morning.addingTimeInterval(reading.seconds))
            }
            store.record(other, sensor: "temperature", value: 99, at: morning)
            store.record(board, sensor: "humidity", value: 45.5, at: morning)
            await store.flush()

            let since = milliseconds(morning)
            let until = milliseconds(morning.addingTimeInterval(7200))
            let raw = try await store.read([(board, "nano-01")], sensor: "temperature", since: since, until: until, resolution: .raw)
            #expect(raw.count == 1)
            #expect(raw[0].name == "nano-01")
            #expect(raw[0].points.map(\.mean) == readings.map(\.value))
            #expect(raw[0].points.first?.time == since)

            let fiveMinutes = try await store.read([(board, nil)], sensor: "temperature", since: since, until: until, resolution: .fiveMinutes)
            #expect(fiveMinutes[0].points == [
                HistoryPoint(time: since, mean: 23, min: 20, max: 27, count: 3),
                HistoryPoint(time: since + 300_000, mean: 20, min: 19, max: 21, count: 2),
                HistoryPoint(time: since + 3_600_000, mean: -5, min: -5, max: -5, count: 1),
                HistoryPoint(time: since + 3_900_000, mean: 5, min: 5, max: 5, count: 1),
            ])
            let hours = try await store.read([(board, nil)], sensor: "temperature", since: since, until: until, resolution: .hour)
            #expect(hours[0].points == [
                HistoryPoint(time: since, mean: (20 + 22 + 27 + 19 + 21) / 5, min: 19, max: 27, count: 5),
                HistoryPoint(time: since + 3_600_000, mean: 0, min: -5, max: 5, count: 2),
            ])
            let summary = try #require(hours[0].summary)
            #expect(summary.count == 7)
            #expect(summary.min == -5 && summary.max == 27)
            #expect(summary.last == 5)  // the latest reading, not its hour's mean
            #expect(summary.lastTime == milliseconds(morning.addingTimeInterval(3900)))

            // Another board and another sensor are their own series; a board with none is empty.
            let humidity = try await store.read([(board, nil), (other, nil)], sensor: "humidity", since: since, until: until, resolution: .raw)
            #expect(humidity.map(\.points.count) == [1, 0])
            #expect(humidity[0].points.first?.mean == 45.5)
        }
    }

    /// Raw readings are bounded for all boards together: exactly the bound is read, one more
    /// is refused, and buckets of the same span are not bounded by it.
    @Test func rawReadsStopAtTheirBound() async throws {
        try await withStore { store in
            for second in 0..<6 {
                store.record(board, sensor: "temperature", value: Double(second), at: morning.addingTimeInterval(Double(second)))
                store.record(other, sensor: "temperature", value: Double(second), at: morning.addingTimeInterval(Double(second)))
            }
            await store.flush()
            let since = milliseconds(morning)
            let until = milliseconds(morning.addingTimeInterval(60))
            let both = [(address: board, name: String?.none), (address: other, name: String?.none)]
            let exact = try await store.read(both, sensor: "temperature", since: since, until: until, resolution: .raw, maxRawPoints: 12)
            #expect(exact.map(\.points.count) == [6, 6])
            await #expect(throws: HistoryError.tooManyRawPoints(11)) {
                _ = try await store.read(both, sensor: "temperature", since: since, until: until, resolution: .raw, maxRawPoints: 11)
            }
            let buckets = try await store.read(
                both, sensor: "temperature", since: since, until: until, resolution: .fiveMinutes, maxRawPoints: 1)
            #expect(buckets.map(\.points.count) == [1, 1])
        }
    }

    /// The daemon writes every few seconds: a reading already shown (blectl temp) must not
    /// be missing from a history.read that follows it before the next write.
    @Test func aReadingNotYetWrittenIsInTheNextRead() async throws {
        try await withStore { store in
            store.record(board, sensor: "temperature", value: 21, at: morning)
            store.record(board, sensor: "temperature", value: 23, at: morning.addingTimeInterval(1))
            let series = try await store.read(
                [(board, nil)], sensor: "temperature", since: milliseconds(morning),
                until: milliseconds(morning.addingTimeInterval(60)), resolution: .raw)
            #expect(series[0].points.map(\.mean) == [21, 23])
            let buckets = try await store.read(
                [(board, nil)], sensor: "temperature", since: milliseconds(morning),
                until: milliseconds(morning.addingTimeInterval(60)), resolution: .fiveMinutes)
            #expect(buckets[0].points.map(\.count) == [2])
        }
    }

    @Test func aSecondFlushAddsToTheSameBuckets() async throws {
        try await withStore { store in
            store.record(board, sensor: "temperature", value: 10, at: morning)
            await store.flush()
            store.record(board, sensor: "temperature", value: 30, at: morning.addingTimeInterval(10))
            await store.flush()
            let points = try await store.read(
                [(board, nil)], sensor: "temperature", since: milliseconds(morning), until: milliseconds(morning) + 60_000,
                resolution: .fiveMinutes
            )[0].points
            #expect(points == [HistoryPoint(time: milliseconds(morning), mean: 20, min: 10, max: 30, count: 2)])
        }
    }

    @Test func retentionDropsReadingsAndFiveMinuteBucketsPastTheirAgeAndKeepsHours() async throws {
        try await withStore(settings { $0.rawDays = 10; $0.fiveMinuteDays = 90 }) { store in
            let now = morning
            let ages: [Double] = [1, 11, 100]  // days
            for days in ages {
                store.record(board, sensor: "temperature", value: days, at: now.addingTimeInterval(-days * 86_400))
            }
            await store.flush()
            await store.maintain(now: now)
            let since = milliseconds(now.addingTimeInterval(-200 * 86_400))
            let until = milliseconds(now)
            func values(_ resolution: HistoryResolution) async throws -> [Double] {
                try await store.read([(board, nil)], sensor: "temperature", since: since, until: until, resolution: resolution)[0]
                    .points.map(\.mean)
            }
            let (raw, fiveMinutes, hours) = (try await values(.raw), try await values(.fiveMinutes), try await values(.hour))
            #expect(raw == [1])
            #expect(fiveMinutes == [11, 1])
            #expect(hours == [100, 11, 1])
        }
    }

    @Test func theFileNeverGrowsPastItsCap() async throws {
        let cap: Int64 = 1 << 20
        try await withStore(settings { $0.maxBytes = cap }) { store in
            // 20 boards, a reading a second each, for 4 hours: far more than a MiB.
            let boards = (1...20).map { BoardAddress(String(format: "AA:BB:CC:DD:EF:%02X", $0))! }
            for hour in 0..<4 {
                for second in stride(from: 0, to: 3600, by: 1) {
                    let time = morning.addingTimeInterval(Double(hour * 3600 + second))
                    for (index, address) in boards.enumerated() {
                        store.record(address, sensor: "temperature", value: Double(index + second % 7), at: time)
                    }
                }
                await store.flush()
                await store.maintain(now: morning.addingTimeInterval(Double((hour + 1) * 3600)))
                #expect(fileBytes() <= cap, "after hour \(hour + 1)")
            }
            // The newest readings are kept; the oldest went first.
            let newest = try await store.read(
                [(boards[0], nil)], sensor: "temperature", since: milliseconds(morning.addingTimeInterval(4 * 3600 - 60)),
                until: milliseconds(morning.addingTimeInterval(4 * 3600)), resolution: .raw)
            #expect(newest[0].points.count == 60)
            #expect(store.state == .on)
        }
    }

    /// The database file with its write-ahead log.
    func fileBytes() -> Int64 {
        ["", "-wal"].reduce(0) { total, suffix in
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/history.sqlite3" + suffix)
            return total + ((attributes?[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }

    @Test func aRestartKeepsTheHistory() async throws {
        try await withStore { first in
            first.record(board, sensor: "temperature", value: 21, at: morning)
        }
        try await withStore { second in
            let series = try await second.read(
                [(board, nil)], sensor: "temperature", since: milliseconds(morning), until: milliseconds(morning), resolution: .raw)
            #expect(series[0].points == [HistoryPoint(time: milliseconds(morning), value: 21)])
        }
    }

    @Test func aCorruptFileIsSetAsideAndANewOneStarted() async throws {
        let path = directory + "/history.sqlite3"
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
        try await withStore { store in
            #expect(store.state == .on)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            let aside = try #require(names.first { $0.hasPrefix("history.sqlite3.corrupt-") })
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + aside)) == Data(repeating: 0x5A, count: 8192))
            store.record(board, sensor: "temperature", value: 7, at: morning)
            await store.flush()
            let series = try await store.read(
                [(board, nil)], sensor: "temperature", since: milliseconds(morning), until: milliseconds(morning), resolution: .raw)
            #expect(series[0].points.count == 1)
        }
    }

    @Test func historyTurnedOffInTheConfigurationSaysSo() async throws {
        try await withStore(settings { $0.enabled = false }) { store in
            guard case .off(let reason) = store.state else {
                Issue.record("history is on")
                return
            }
            #expect(reason.contains("enabled: false"))
            await #expect(throws: HistoryError.self) {
                try await store.read([(board, nil)], sensor: "temperature", since: 0, until: 1, resolution: .raw)
            }
        }
    }
}

/// File systems that refuse: a read-only one and a full one (tmpfs mounts; the tests run as
/// root, whom permissions do not stop).
extension HistoryStoreTests {
    func withMount<T>(_ options: String, _ body: (String) async throws -> T) async throws -> T {
        let mountPoint = directory + "/mnt"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        _ = try runCommand("/usr/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", mountPoint])
        defer { _ = try? runCommand("/usr/bin/umount", ["-l", mountPoint]) }
        return try await body(mountPoint)
    }

    @Test func aReadOnlyStateDirectoryLeavesTheHistoryOffWithTheReason() async throws {
        try await withMount("ro,size=1m") { mountPoint in
            try await withStore(HistorySettings(path: mountPoint + "/history.sqlite3")) { store in
                guard case .off(let reason) = store.state else {
                    Issue.record("history is on in a read-only directory")
                    return
                }
                #expect(reason.contains(mountPoint + "/history.sqlite3"))
                // Readings are dropped and counted; nothing throws, nothing waits.
                store.record(board, sensor: "temperature", value: 1, at: morning)
                await store.flush()
                #expect(store.droppedCount == 1)
            }
        }
    }

    @Test func aFullDiskTurnsTheHistoryOffAndItComesBackWhenThereIsRoom() async throws {
        try await withMount("size=256k") { mountPoint in
            let path = mountPoint + "/history.sqlite3"
            try await withStore(HistorySettings(path: path)) { store in
                #expect(store.state == .on)
                let filler = mountPoint + "/filler"
                // Whatever room is left, taken.
                _ = FileManager.default.createFile(atPath: filler, contents: nil)
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: filler))
                while (try? handle.write(contentsOf: Data(count: 4096))) != nil {}
                try handle.close()
                for second in 0..<5000 {
                    store.record(board, sensor: "temperature", value: Double(second), at: morning.addingTimeInterval(Double(second)))
                }
                await store.flush()
                guard case .off(let reason) = store.state else {
                    Issue.record("history still on with the disk full")
                    return
                }
                #expect(reason.contains("full") || reason.contains("disk"), "\(reason)")
                try FileManager.default.removeItem(atPath: filler)
                await store.maintain(now: morning)
                #expect(store.state == .on)
                store.record(board, sensor: "temperature", value: 42, at: morning)
                await store.flush()
                #expect(store.state == .on)
            }
        }
    }
}
