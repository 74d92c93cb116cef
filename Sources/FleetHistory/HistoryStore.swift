public import FleetModel
public import Foundation
public import Logging
import SQLiteNIO
import Synchronization

/// Every sensor reading of the fleet, kept in an SQLite file under the state directory:
/// the readings themselves for ``HistorySettings/rawDays``, 5-minute buckets (mean, minimum,
/// maximum, count) for ``HistorySettings/fiveMinuteDays``, hourly buckets for ever, the whole
/// never past ``HistorySettings/maxBytes``.
///
/// ``record(_:sensor:value:at:)`` only queues (it never waits); ``flush()`` writes what is
/// queued in one transaction, the buckets updated with it; ``maintain(now:)`` drops what is
/// past its age and keeps the file under its cap. A file SQLite finds corrupt is set aside
/// (renamed `….corrupt-TIME`) and a new one started; a file that cannot be opened or written
/// (a read-only or full state directory) turns the history off with the reason, and the
/// next ``maintain(now:)`` tries again. The fleet never waits for the history.
public actor HistoryStore {
    /// Whether readings are being kept, and if not, why.
    public enum State: Sendable, Hashable {
        case on
        case off(reason: String)
    }

    struct Pending: Sendable {
        var address: BoardAddress
        var sensor: String
        var time: Int64
        var value: Double
    }

    public nonisolated let settings: HistorySettings
    private let logger: Logger
    private var connection: SQLiteConnection?
    /// Series ids by board and sensor.
    private var seriesIDs: [String: Int64] = [:]
    private let queue = Mutex<[Pending]>([])
    private let current = Mutex<State>(.off(reason: "not opened yet"))
    /// Readings dropped since the history went off (or that a write lost).
    private let dropped = Atomic<Int>(0)

    /// Readings queued at most between two flushes: beyond it the oldest are dropped.
    static let queueLimit = 100_000

    public init(settings: HistorySettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Whether readings are being kept now.
    public nonisolated var state: State { current.withLock { $0 } }

    // MARK: Opening

    /// Opens (or creates) the file; sets a corrupt one aside. Never throws: a file that
    /// cannot be had leaves the history off, with the reason in ``state``.
    public func open() async {
        guard settings.enabled else {
            setState(.off(reason: "history is turned off in the configuration (history: enabled: false)"))
            return
        }
        guard connection == nil else { return }
        do {
            connection = try await openChecked()
            seriesIDs = [:]
            setState(.on)
        } catch let error as Corrupt {
            let aside = setAside(reason: error.detail)
            do {
                connection = try await openChecked()
                setState(.on)
                logger.error(
                    "history database was corrupt; set aside, a new one started",
                    metadata: ["history.path": "\(settings.path)", "history.aside": "\(aside)", "error": "\(error.detail)"])
            } catch {
                turnOff(because: error, doing: "create")
            }
        } catch {
            turnOff(because: error, doing: "open")
        }
    }

    private struct Corrupt: Error {
        var detail: String
    }

    private func openChecked() async throws -> SQLiteConnection {
        let directory = (settings.path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let connection = try await SQLiteConnection.open(storage: .file(path: settings.path), logger: logger)
        do {
            // Before any table: lets maintain() give freed pages back to the file system.
            _ = try await connection.query("PRAGMA auto_vacuum = INCREMENTAL")
            let check = try await connection.query("PRAGMA quick_check")
            let verdict = check.first?.column("quick_check")?.string ?? "no answer"
            guard verdict == "ok" else { throw Corrupt(detail: verdict) }
            for statement in Self.schema { _ = try await connection.query(statement) }
            return connection
        } catch let error as SQLiteError where error.reason == .corrupt || error.reason == .notADatabase {
            try? await connection.close()
            throw Corrupt(detail: error.message)
        } catch {
            try? await connection.close()
            throw error
        }
    }

    static let schema = [
        "PRAGMA journal_mode = WAL",
        "PRAGMA synchronous = NORMAL",
        "PRAGMA journal_size_limit = 1048576",
        // The writes touch the ends of two indexes and a few buckets: 512 KiB of page cache
        // holds them (SQLite's default, 2 MiB, is RSS the daemon gains over its first half hour:
        // 80 KiB a minute with 20 boards notifying every second, flat with the history off).
        "PRAGMA cache_size = -512",
        """
        CREATE TABLE IF NOT EXISTS series (
            id INTEGER PRIMARY KEY, board TEXT NOT NULL, sensor TEXT NOT NULL, UNIQUE (board, sensor))
        """,
        // One row per reading: t in milliseconds since the epoch.
        "CREATE TABLE IF NOT EXISTS reading (series INTEGER NOT NULL, t INTEGER NOT NULL, value REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS reading_by_time ON reading (series, t)",
        // Buckets: width in milliseconds (300000, 3600000), start in milliseconds.
        """
        CREATE TABLE IF NOT EXISTS bucket (
            width INTEGER NOT NULL, series INTEGER NOT NULL, start INTEGER NOT NULL,
            n INTEGER NOT NULL, total REAL NOT NULL, low REAL NOT NULL, high REAL NOT NULL,
            PRIMARY KEY (width, series, start)) WITHOUT ROWID
        """,
    ]

    /// Renames the file (and its WAL and shared-memory files) aside; returns the new name.
    private func setAside(reason: String) -> String {
        let stamp = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
            .replacingOccurrences(of: ":", with: "")
        let aside = "\(settings.path).corrupt-\(stamp)"
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: settings.path + suffix) {
            _ = rename(settings.path + suffix, aside + suffix)
        }
        return aside
    }

    private func turnOff(because error: any Error, doing what: String) {
        let reason = "cannot \(what) \(settings.path): \(Self.describe(error))"
        if state != .off(reason: reason) {
            logger.error("history is off", metadata: ["history.path": "\(settings.path)", "reason": "\(reason)"])
        }
        setState(.off(reason: reason))
    }

    private nonisolated func setState(_ state: State) {
        current.withLock { $0 = state }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? SQLiteError {
            switch error.reason {
            case .full: return "the disk is full"
            case .readOnly, .readonlyDirectory: return "the file or its directory is read-only"
            case .cantOpen: return "the file cannot be opened or created (\(error.message))"
            default: return error.message
            }
        }
        if let error = error as? CocoaError, let underlying = error.underlying as? POSIXError {
            return String(cString: strerror(underlying.code.rawValue))
        }
        return "\(error)"
    }

    // MARK: Recording

    /// Queues one reading; never waits. Dropped (and counted) while the history is off.
    public nonisolated func record(_ address: BoardAddress, sensor: String, value: Double, at time: Date = Date()) {
        guard state == .on, value.isFinite else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        let reading = Pending(address: address, sensor: sensor, time: Int64((time.timeIntervalSince1970 * 1000).rounded()), value: value)
        let overflowed = queue.withLock { queue -> Bool in
            queue.append(reading)
            guard queue.count > Self.queueLimit else { return false }
            queue.removeFirst(queue.count - Self.queueLimit)
            return true
        }
        if overflowed { dropped.add(1, ordering: .relaxed) }
    }

    /// Counts readings lost before they reached the store.
    public nonisolated func countDropped(_ count: Int) {
        dropped.add(count, ordering: .relaxed)
    }

    /// Readings not kept since the daemon started (the history off, or a write that failed).
    public nonisolated var droppedCount: Int { dropped.load(ordering: .relaxed) }

    /// Writes what is queued, readings and buckets in one transaction.
    public func flush() async {
        let batch = queue.withLock { queue -> [Pending] in
            defer { queue = [] }
            return queue
        }
        guard !batch.isEmpty else { return }
        guard let connection else {
            dropped.add(batch.count, ordering: .relaxed)
            return
        }
        do {
            _ = try await connection.query("BEGIN IMMEDIATE")
            do {
                try await write(batch, on: connection)
                _ = try await connection.query("COMMIT")
            } catch {
                _ = try? await connection.query("ROLLBACK")
                throw error
            }
        } catch {
            dropped.add(batch.count, ordering: .relaxed)
            await failed(error, doing: "write to")
        }
    }

    private func write(_ batch: [Pending], on connection: SQLiteConnection) async throws {
        var rows: [(series: Int64, time: Int64, value: Double)] = []
        rows.reserveCapacity(batch.count)
        for reading in batch {
            rows.append((try await seriesID(reading.address, reading.sensor, on: connection), reading.time, reading.value))
        }
        // At most 999 binds a statement (SQLite's historical limit).
        for chunk in stride(from: 0, to: rows.count, by: 333) {
            let part = rows[chunk..<min(chunk + 333, rows.count)]
            let values = Array(repeating: "(?, ?, ?)", count: part.count).joined(separator: ", ")
            _ = try await connection.query(
                "INSERT INTO reading (series, t, value) VALUES \(values)",
                part.flatMap { [.integer(Int($0.series)), .integer(Int($0.time)), .float($0.value)] })
        }
        for resolution in [HistoryResolution.fiveMinutes, .hour] {
            let width = resolution.bucketMilliseconds!
            var buckets: [BucketKey: Aggregate] = [:]
            for row in rows {
                buckets[BucketKey(series: row.series, start: row.time - Self.modulo(row.time, width)), default: Aggregate()]
                    .add(row.value)
            }
            let entries = Array(buckets)
            for chunk in stride(from: 0, to: entries.count, by: 142) {
                let part = entries[chunk..<min(chunk + 142, entries.count)]
                let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: part.count).joined(separator: ", ")
                _ = try await connection.query(
                    """
                    INSERT INTO bucket (width, series, start, n, total, low, high) VALUES \(values)
                    ON CONFLICT (width, series, start) DO UPDATE SET
                        n = n + excluded.n, total = total + excluded.total,
                        low = min(low, excluded.low), high = max(high, excluded.high)
                    """,
                    part.flatMap { key, aggregate -> [SQLiteData] in
                        [
                            .integer(Int(width)), .integer(Int(key.series)), .integer(Int(key.start)), .integer(aggregate.count),
                            .float(aggregate.total), .float(aggregate.low), .float(aggregate.high),
                        ]
                    })
            }
        }
    }

    private struct BucketKey: Hashable {
        var series: Int64
        var start: Int64
    }

    private struct Aggregate {
        var count = 0
        var total = 0.0
        var low = Double.infinity
        var high = -Double.infinity

        mutating func add(_ value: Double) {
            count += 1
            total += value
            low = min(low, value)
            high = max(high, value)
        }
    }

    static func modulo(_ value: Int64, _ divisor: Int64) -> Int64 {
        let remainder = value % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }

    private func seriesID(_ address: BoardAddress, _ sensor: String, on connection: SQLiteConnection) async throws -> Int64 {
        let key = "\(address.rawValue)/\(sensor)"
        if let id = seriesIDs[key] { return id }
        _ = try await connection.query(
            "INSERT OR IGNORE INTO series (board, sensor) VALUES (?, ?)", [.text(address.rawValue), .text(sensor)])
        let rows = try await connection.query(
            "SELECT id FROM series WHERE board = ? AND sensor = ?", [.text(address.rawValue), .text(sensor)])
        guard let id = rows.first?.column("id")?.integer else { throw HistoryError.internal("series \(key) has no id") }
        seriesIDs[key] = Int64(id)
        return Int64(id)
    }

    /// A write or query failed: a corrupt file is set aside and a new one started; anything
    /// else (a full disk, a read-only directory) turns the history off until
    /// ``maintain(now:)`` finds it can write again.
    private func failed(_ error: any Error, doing what: String) async {
        if let error = error as? SQLiteError, error.reason == .corrupt || error.reason == .notADatabase {
            try? await connection?.close()
            connection = nil
            let aside = setAside(reason: error.message)
            logger.error(
                "history database is corrupt; set aside, a new one started",
                metadata: ["history.path": "\(settings.path)", "history.aside": "\(aside)", "error": "\(error.message)"])
            await open()
            return
        }
        try? await connection?.close()
        connection = nil
        turnOff(because: error, doing: what)
    }

    // MARK: Maintenance

    /// Drops readings older than ``HistorySettings/rawDays`` and 5-minute buckets older than
    /// ``HistorySettings/fiveMinuteDays``, then keeps the file under its cap (oldest first:
    /// readings, then 5-minute buckets, then hourly ones). An off history whose file can be
    /// had again is turned back on.
    public func maintain(now: Date = Date()) async {
        if connection == nil {
            await open()
            return
        }
        guard let connection else { return }
        let nowMilliseconds = Int64(now.timeIntervalSince1970 * 1000)
        do {
            let series = try await connection.query("SELECT id FROM series").compactMap { $0.column("id")?.integer }
            let rawCutoff = nowMilliseconds - Int64(settings.rawDays) * 86_400_000
            let fiveMinuteCutoff = nowMilliseconds - Int64(settings.fiveMinuteDays) * 86_400_000
            for id in series {
                _ = try await connection.query("DELETE FROM reading WHERE series = ? AND t < ?", [.integer(id), .integer(Int(rawCutoff))])
                _ = try await connection.query(
                    "DELETE FROM bucket WHERE width = 300000 AND series = ? AND start < ?", [.integer(id), .integer(Int(fiveMinuteCutoff))])
            }
            try await keepUnderCap(series: series, on: connection)
        } catch {
            await failed(error, doing: "maintain")
        }
    }

    /// Bytes the file's pages hold (free pages left out).
    public func usedBytes() async throws -> Int64 {
        guard let connection else { return 0 }
        var values: [Int64] = []
        for name in ["page_count", "freelist_count", "page_size"] {
            values.append(Int64(try await connection.query("PRAGMA \(name)").first?.column(name)?.integer ?? 0))
        }
        return (values[0] - values[1]) * values[2]
    }

    /// Deletes the oldest data until the pages in use are under 80 % of the cap (it starts at
    /// 90 %), then gives the free pages back and truncates the write-ahead log. Readings go
    /// first, then 5-minute buckets, then hourly ones; each step drops the oldest tenth of
    /// what is left of that kind's span (found through each series' index, never a scan).
    private func keepUnderCap(series: [Int], on connection: SQLiteConnection) async throws {
        guard try await usedBytes() > settings.maxBytes * 9 / 10 else { return }
        let target = settings.maxBytes * 8 / 10
        var dropped = false
        let kinds = [("reading", "t", ""), ("bucket", "start", "width = 300000 AND "), ("bucket", "start", "width = 3600000 AND ")]
        for (table, column, condition) in kinds {
            while try await usedBytes() > target {
                var oldest = Int.max
                var newest = Int.min
                for id in series {
                    let row = try await connection.query(
                        "SELECT min(\(column)) AS oldest, max(\(column)) AS newest FROM \(table) WHERE \(condition)series = ?",
                        [.integer(id)]
                    ).first
                    if let low = row?.column("oldest")?.integer { oldest = min(oldest, low) }
                    if let high = row?.column("newest")?.integer { newest = max(newest, high) }
                }
                guard oldest <= newest else { break }  // nothing of this kind is left
                let cutoff = oldest + max((newest - oldest) / 10, 1)
                for id in series {
                    _ = try await connection.query(
                        "DELETE FROM \(table) WHERE \(condition)series = ? AND \(column) < ?", [.integer(id), .integer(cutoff)])
                }
                dropped = true
            }
        }
        if dropped {
            logger.notice(
                "history reached its size cap; the oldest data was dropped", metadata: ["history.max-bytes": "\(settings.maxBytes)"])
        }
        _ = try await connection.query("PRAGMA incremental_vacuum")
        _ = try await connection.query("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    // MARK: Reading

    /// The history of `sensor` of each board in `boards` between `since` and `until`
    /// (milliseconds since the epoch, `until` included), at `resolution`. A board with
    /// nothing kept gets a series without points.
    /// Raw readings are read `maxRawPoints` at most for all the boards together: past that,
    /// ``HistoryError/tooManyRawPoints(_:)`` is thrown, nothing more read.
    public func read(
        _ boards: [(address: BoardAddress, name: String?)], sensor: String, since: Int64, until: Int64,
        resolution: HistoryResolution, maxRawPoints: Int = .max
    ) async throws(HistoryError) -> [HistorySeries] {
        // What is queued is written first: a reading already shown is never missing here.
        await flush()
        guard let connection else {
            if case .off(let reason) = state { throw .off(reason) }
            throw .off("the history is not open")
        }
        do {
            var result: [HistorySeries] = []
            var rawLeft = maxRawPoints
            for board in boards {
                let idRows = try await connection.query(
                    "SELECT id FROM series WHERE board = ? AND sensor = ?", [.text(board.address.rawValue), .text(sensor)])
                guard let id = idRows.first?.column("id")?.integer else {
                    result.append(HistorySeries(address: board.address, name: board.name, sensor: sensor, points: []))
                    continue
                }
                var points: [HistoryPoint] = []
                var latest: HistoryPoint?
                if let width = resolution.bucketMilliseconds {
                    let rows = try await connection.query(
                        """
                        SELECT start, n, total, low, high FROM bucket
                        WHERE width = ? AND series = ? AND start >= ? AND start <= ? ORDER BY start
                        """,
                        [.integer(Int(width)), .integer(id), .integer(Int(since - Self.modulo(since, width))), .integer(Int(until))])
                    points = rows.compactMap { row in
                        guard let start = row.column("start")?.integer, let count = row.column("n")?.integer, count > 0,
                            let total = row.column("total")?.double, let low = row.column("low")?.double,
                            let high = row.column("high")?.double
                        else { return nil }
                        return HistoryPoint(time: Int64(start), mean: total / Double(count), min: low, max: high, count: count)
                    }
                    let last = try await connection.query(
                        "SELECT t, value FROM reading WHERE series = ? AND t >= ? AND t <= ? ORDER BY t DESC LIMIT 1",
                        [.integer(id), .integer(Int(since)), .integer(Int(until))])
                    if let row = last.first, let time = row.column("t")?.integer, let value = row.column("value")?.double {
                        latest = HistoryPoint(time: Int64(time), value: value)
                    }
                } else {
                    // One row more than is left tells that there are too many, reading no more.
                    let rows = try await connection.query(
                        "SELECT t, value FROM reading WHERE series = ? AND t >= ? AND t <= ? ORDER BY t LIMIT ?",
                        [.integer(id), .integer(Int(since)), .integer(Int(until)), .integer(rawLeft == .max ? -1 : rawLeft + 1)])
                    guard rows.count <= rawLeft else { throw HistoryError.tooManyRawPoints(maxRawPoints) }
                    rawLeft -= rows.count
                    points = rows.compactMap { row in
                        guard let time = row.column("t")?.integer, let value = row.column("value")?.double else { return nil }
                        return HistoryPoint(time: Int64(time), value: value)
                    }
                }
                result.append(HistorySeries(address: board.address, name: board.name, sensor: sensor, points: points, latest: latest))
            }
            return result
        } catch let error as HistoryError {
            throw error
        } catch {
            throw .failed(Self.describe(error))
        }
    }

    /// Writes what is queued and closes the file.
    public func close() async {
        await flush()
        if let connection {
            _ = try? await connection.query("PRAGMA wal_checkpoint(TRUNCATE)")
            try? await connection.close()
        }
        connection = nil
        setState(.off(reason: "the daemon is stopping"))
    }
}

/// Why a history could not be read.
public enum HistoryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The history is off (the reason says why).
    case off(String)
    /// The query failed.
    case failed(String)
    case `internal`(String)
    /// A raw read would return more readings than this.
    case tooManyRawPoints(Int)

    public var description: String {
        switch self {
        case .tooManyRawPoints(let limit): "The span holds more than \(limit) raw readings of these boards."
        case .off(let reason): "The history is off: \(reason)."
        case .failed(let detail): "The history could not be read: \(detail)."
        case .internal(let detail): "The history failed: \(detail)."
        }
    }
}
