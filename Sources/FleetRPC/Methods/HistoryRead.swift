public import JSONRPC
public import FoundationEssentials

extension FleetMethods {
    /// `history.read`: a sensor's kept readings of the selected boards over a span, every
    /// reading or 5-minute or hourly buckets.
    public enum HistoryRead: RPCMethod {
        public static let descriptor = describe(
            "history.read", "The kept readings of a sensor of the selected boards between two times, raw or in 5-minute or hourly buckets.",
            params: [
                "select": "The boards.", "sensor": "The sensor's name in the boards' profile (default temperature).",
                "since": "The span's start, an RFC 3339 time like 2026-11-24T08:00:00Z.",
                "until": "The span's end, an RFC 3339 time (default now).",
                "resolution": "raw (every reading), 5m or 1h (buckets: mean, min, max, count); default: raw up to 6 h, 5m up to 7 days, else 1h.",
            ],
            result: RPCResultDescriptor("history", "The span, the resolution told, and per board its points and their summary."),
            access: .read, errors: [.permissionDenied, .boardNotFound, .invalidParams, .historyUnavailable])

        public struct Params: RPCMethodParams, Hashable {
            public var select: Selection
            public var sensor: String?
            public var since: WireTimestamp
            public var until: WireTimestamp?
            public var resolution: HistoryResolution?

            /// `since` and `until` in milliseconds since the Unix epoch.
            public init(select: Selection, sensor: String? = nil, since: Int64, until: Int64? = nil, resolution: HistoryResolution? = nil) {
                (self.select, self.sensor, self.resolution) = (select, sensor, resolution)
                (self.since, self.until) = (WireTimestamp(milliseconds: since), until.map(WireTimestamp.init(milliseconds:)))
            }
        }

        public typealias Result = HistoryResult

        /// Raw readings one reply carries at most, for all its boards together (about 5 MB of
        /// JSON): a span that holds more is refused with ``tooManyRawPoints`` when raw was
        /// asked for, and read in 5-minute buckets when the resolution was left to the daemon.
        public static let maxRawPoints = 100_000

        /// The answer to a raw read of more than ``maxRawPoints`` readings.
        public static let tooManyRawPoints = RPCError(
            .invalidParams,
            "Too many readings: the span holds more than \(maxRawPoints) raw readings of these boards, the most one reply "
                + "carries; ask for a shorter span, fewer boards, or resolution 5m.")
    }
}

/// Times on the wire: RFC 3339, UTC, with milliseconds when they are not whole seconds.
public enum WireTime {
    /// `text` read as an RFC 3339 time (with or without fractional seconds, any offset).
    public static func date(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }

    public static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    /// Milliseconds since the epoch as RFC 3339 in UTC.
    public static func text(_ milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return milliseconds % 1000 == 0
            ? date.formatted(Date.ISO8601FormatStyle())
            : date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

/// A time on the wire: RFC 3339 text there, milliseconds since the Unix epoch here.
public struct WireTimestamp: Sendable, Hashable, Codable, RPCValue {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static let placeholder = WireTimestamp(milliseconds: 0)
    public static let rpcType = RPCValueType.custom(
        RPCCustomType(
            name: "time", expectation: "an RFC 3339 time like 2026-11-24T08:00:00Z",
            jsonSchema: ["type": "string", "format": "date-time"],
            parse: { value throws(RPCCustomType.Problem) in
                guard let text = value.stringValue, let date = WireTime.date(text) else {
                    throw RPCCustomType.Problem("\(value) is not an RFC 3339 time like 2026-11-24T08:00:00Z.")
                }
                return WireTimestamp(milliseconds: WireTime.milliseconds(date))
            }))

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let date = WireTime.date(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not an RFC 3339 time")
        }
        milliseconds = WireTime.milliseconds(date)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(WireTime.text(milliseconds))
    }
}

/// Result of `history.read`.
public struct HistoryResult: Sendable, Hashable {
    public var sensor: String
    public var since: Int64
    public var until: Int64
    public var resolution: HistoryResolution
    public var series: [HistorySeries]
    /// Selectors that matched no board.
    public var unmatched: [Selection.Selector]

    public init(
        sensor: String, since: Int64, until: Int64, resolution: HistoryResolution, series: [HistorySeries], unmatched: [Selection.Selector] = []
    ) {
        (self.sensor, self.since, self.until, self.resolution, self.series) = (sensor, since, until, resolution, series)
        self.unmatched = unmatched
    }
}

/// On the wire: `{"sensor", "since", "until", "resolution", "boards": [{"address", "name",
/// "decimals", "summary": {min, mean, max, last, lastTime, count}, "points": [{"time", "value"} or
/// {"time", "value", "min", "max", "count"}]}]}`; a raw point's value is the reading, a
/// bucket's its mean. `decimals` (absent for a float sensor) is what the profile's scale
/// gives a reading: readings, minima and maxima are exact to it, means to one more.
extension HistoryResult: Codable {
    enum CodingKeys: String, CodingKey { case sensor, since, until, resolution, boards, unmatched }
    enum SeriesKeys: String, CodingKey { case address, name, decimals, summary, points }
    enum SummaryKeys: String, CodingKey { case min, mean, max, last, lastTime, count }
    enum PointKeys: String, CodingKey { case time, value, min, max, count }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sensor, forKey: .sensor)
        try container.encode(WireTime.text(since), forKey: .since)
        try container.encode(WireTime.text(until), forKey: .until)
        try container.encode(resolution.rawValue, forKey: .resolution)
        if !unmatched.isEmpty { try container.encode(unmatched.map(\.description), forKey: .unmatched) }
        var boards = container.nestedUnkeyedContainer(forKey: .boards)
        for series in series {
            var board = boards.nestedContainer(keyedBy: SeriesKeys.self)
            try board.encode(series.address, forKey: .address)
            try board.encode(series.name ?? "", forKey: .name)
            try board.encodeIfPresent(series.decimals, forKey: .decimals)
            if let summary = series.summary {
                var figures = board.nestedContainer(keyedBy: SummaryKeys.self, forKey: .summary)
                try figures.encode(summary.min, forKey: .min)
                try figures.encode(summary.mean, forKey: .mean)
                try figures.encode(summary.max, forKey: .max)
                try figures.encode(summary.last, forKey: .last)
                try figures.encode(WireTime.text(summary.lastTime), forKey: .lastTime)
                try figures.encode(summary.count, forKey: .count)
            }
            var points = board.nestedUnkeyedContainer(forKey: .points)
            for point in series.points {
                var entry = points.nestedContainer(keyedBy: PointKeys.self)
                try entry.encode(WireTime.text(point.time), forKey: .time)
                try entry.encode(point.mean, forKey: .value)
                if resolution != .raw {
                    try entry.encode(point.min, forKey: .min)
                    try entry.encode(point.max, forKey: .max)
                    try entry.encode(point.count, forKey: .count)
                }
            }
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func time(_ text: String, _ key: any CodingKey) throws -> Int64 {
            guard let date = WireTime.date(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: CodingKeys.since, in: container, debugDescription: "\(key.stringValue) \"\(text)\" is not an RFC 3339 time")
            }
            return WireTime.milliseconds(date)
        }
        sensor = try container.decode(String.self, forKey: .sensor)
        since = try time(try container.decode(String.self, forKey: .since), CodingKeys.since)
        until = try time(try container.decode(String.self, forKey: .until), CodingKeys.until)
        let text = try container.decode(String.self, forKey: .resolution)
        guard let resolution = HistoryResolution(rawValue: text) else {
            throw DecodingError.dataCorruptedError(forKey: .resolution, in: container, debugDescription: "unknown resolution \(text)")
        }
        self.resolution = resolution
        unmatched = (try container.decodeIfPresent([String].self, forKey: .unmatched) ?? []).compactMap { try? Selection.Selector(parsing: $0) }
        var boards = try container.nestedUnkeyedContainer(forKey: .boards)
        var series: [HistorySeries] = []
        while !boards.isAtEnd {
            let board = try boards.nestedContainer(keyedBy: SeriesKeys.self)
            var points: [HistoryPoint] = []
            var entries = try board.nestedUnkeyedContainer(forKey: .points)
            while !entries.isAtEnd {
                let entry = try entries.nestedContainer(keyedBy: PointKeys.self)
                let value = try entry.decode(Double.self, forKey: .value)
                points.append(
                    HistoryPoint(
                        time: try time(try entry.decode(String.self, forKey: .time), PointKeys.time), mean: value,
                        min: try entry.decodeIfPresent(Double.self, forKey: .min) ?? value,
                        max: try entry.decodeIfPresent(Double.self, forKey: .max) ?? value,
                        count: try entry.decodeIfPresent(Int.self, forKey: .count) ?? 1))
            }
            var latest: HistoryPoint?
            if board.contains(.summary) {
                let figures = try board.nestedContainer(keyedBy: SummaryKeys.self, forKey: .summary)
                latest = HistoryPoint(
                    time: try time(try figures.decode(String.self, forKey: .lastTime), SummaryKeys.lastTime),
                    value: try figures.decode(Double.self, forKey: .last))
            }
            let name = try board.decode(String.self, forKey: .name)
            series.append(
                HistorySeries(
                    address: try board.decode(BoardAddress.self, forKey: .address), name: name.isEmpty ? nil : name, sensor: sensor,
                    points: points, latest: latest, decimals: try board.decodeIfPresent(Int.self, forKey: .decimals)))
        }
        self.series = series
    }
}

/// Its coding is its own (times as text, a bucket's figures only at a bucket resolution):
/// so is its schema.
extension HistoryResult: RPCSchemaDescribed {
    public static let placeholder = HistoryResult(sensor: "", since: 0, until: 0, resolution: .raw, series: [])
    public static let jsonSchema: JSONValue = [
        "type": "object", "required": ["sensor", "since", "until", "resolution", "boards"],
        "properties": [
            "sensor": ["type": "string"],
            "since": ["type": "string", "format": "date-time"], "until": ["type": "string", "format": "date-time"],
            "resolution": ["type": "string", "enum": .array(HistoryResolution.allCases.map { .string($0.rawValue) })],
            "unmatched": ["type": "array", "items": ["type": "string"]],
            "boards": [
                "type": "array",
                "items": [
                    "type": "object", "required": ["address", "name", "points"],
                    "properties": [
                        "address": ["type": "string"], "name": ["type": "string"],
                        "decimals": ["type": "integer", "minimum": 0, "maximum": 9],
                        "summary": [
                            "type": "object", "required": ["min", "mean", "max", "last", "lastTime", "count"],
                            "properties": [
                                "min": ["type": "number"], "mean": ["type": "number"], "max": ["type": "number"],
                                "last": ["type": "number"], "lastTime": ["type": "string", "format": "date-time"],
                                "count": ["type": "integer"],
                            ],
                        ],
                        "points": [
                            "type": "array",
                            "items": [
                                "type": "object", "required": ["time", "value"],
                                "properties": [
                                    "time": ["type": "string", "format": "date-time"], "value": ["type": "number"],
                                    "min": ["type": "number"], "max": ["type": "number"], "count": ["type": "integer"],
                                ],
                            ],
                        ],
                    ],
                ],
            ],
        ],
    ]
}
