/// How finely a sensor's history is told: every reading, or buckets of 5 minutes or an hour
/// (each with its mean, minimum, maximum and count).
public enum HistoryResolution: String, Sendable, Hashable, Codable, CaseIterable {
    case raw
    case fiveMinutes = "5m"
    case hour = "1h"

    /// A bucket's length in milliseconds; `nil` for raw readings.
    public var bucketMilliseconds: Int64? {
        switch self {
        case .raw: nil
        case .fiveMinutes: 300_000
        case .hour: 3_600_000
        }
    }

    /// The resolution a span is told at when the caller chooses none: every reading up to
    /// 6 hours, 5-minute buckets up to 7 days, hourly beyond (a few hundred points at most
    /// for a board notifying every few seconds).
    public static func suited(toSpanMilliseconds span: Int64) -> HistoryResolution {
        if span <= 6 * 3_600_000 { return .raw }
        if span <= 7 * 86_400_000 { return .fiveMinutes }
        return .hour
    }
}

/// One point of a sensor's history: a reading (``count`` 1, ``min`` = ``mean`` = ``max``), or
/// a bucket's aggregate stamped with the bucket's start. Times are milliseconds since the
/// Unix epoch (UTC).
public struct HistoryPoint: Sendable, Hashable {
    public var time: Int64
    public var mean: Double
    public var min: Double
    public var max: Double
    public var count: Int

    /// One reading.
    public init(time: Int64, value: Double) {
        self.init(time: time, mean: value, min: value, max: value, count: 1)
    }

    public init(time: Int64, mean: Double, min: Double, max: Double, count: Int) {
        self.time = time
        self.mean = mean
        self.min = min
        self.max = max
        self.count = count
    }
}

/// What a series says over its span: its extremes, its mean over every reading, and the
/// latest value and when it came.
public struct HistorySummary: Sendable, Hashable {
    public var min: Double
    public var mean: Double
    public var max: Double
    public var last: Double
    public var lastTime: Int64
    public var count: Int

    public init(min: Double, mean: Double, max: Double, last: Double, lastTime: Int64, count: Int) {
        self.min = min
        self.mean = mean
        self.max = max
        self.last = last
        self.lastTime = lastTime
        self.count = count
    }

    /// The summary of `points` (readings or buckets, oldest first); `nil` when empty.
    public init?(points: [HistoryPoint]) {
        guard let last = points.last else { return nil }
        var low = Double.infinity
        var high = -Double.infinity
        var total = 0.0
        var count = 0
        for point in points {
            low = Swift.min(low, point.min)
            high = Swift.max(high, point.max)
            total += point.mean * Double(point.count)
            count += point.count
        }
        self.init(min: low, mean: total / Double(Swift.max(count, 1)), max: high, last: last.mean, lastTime: last.time, count: count)
    }
}

/// A board's sensor over a span, as the history keeps it.
public struct HistorySeries: Sendable, Hashable {
    public var address: BoardAddress
    public var name: String?
    public var sensor: String
    public var points: [HistoryPoint]
    /// The span's latest reading, when buckets are told and the readings are still kept.
    public var latest: HistoryPoint?
    /// The decimals the sensor's scale gives a reading (blefleet-profile(5)); nil for a float.
    public var decimals: Int?

    public init(
        address: BoardAddress, name: String?, sensor: String, points: [HistoryPoint], latest: HistoryPoint? = nil, decimals: Int? = nil
    ) {
        self.address = address
        self.name = name
        self.sensor = sensor
        self.points = points
        self.latest = latest
        self.decimals = decimals
    }

    /// The decimals of a mean over `count` readings: a reading's own, one more for a mean of
    /// several; nil for a float sensor.
    public func decimals(ofMeanOver count: Int) -> Int? {
        decimals.map { count == 1 ? $0 : $0 + 1 }
    }

    /// The series told with `decimals`: each reading, minimum and maximum exact to them (a
    /// value kept as 1001.3000000000001 reads 1001.3), a bucket's mean to one more.
    public func told(withDecimals decimals: Int?) -> HistorySeries {
        guard let decimals else { return self }
        var told = self
        told.decimals = decimals
        func exact(_ point: HistoryPoint) -> HistoryPoint {
            HistoryPoint(
                time: point.time, mean: Self.exact(point.mean, told.decimals(ofMeanOver: point.count) ?? decimals),
                min: Self.exact(point.min, decimals), max: Self.exact(point.max, decimals), count: point.count)
        }
        told.points = points.map(exact)
        told.latest = latest.map(exact)
        return told
    }

    /// The double nearest `value` rounded to `places` decimals.
    static func exact(_ value: Double, _ places: Int) -> Double {
        guard value.isFinite, abs(value) < 1e12, (0...9).contains(places) else { return value }
        let power = (0..<places).reduce(1.0) { power, _ in power * 10 }
        return (value * power).rounded() / power
    }

    /// The span's summary: over its points, with the latest reading as ``HistorySummary/last``
    /// where it is known (a bucket's mean otherwise).
    public var summary: HistorySummary? {
        guard var summary = HistorySummary(points: points) else { return nil }
        if let latest {
            summary.last = latest.mean
            summary.lastTime = latest.time
        }
        if let places = decimals(ofMeanOver: summary.count) { summary.mean = Self.exact(summary.mean, places) }
        return summary
    }
}
