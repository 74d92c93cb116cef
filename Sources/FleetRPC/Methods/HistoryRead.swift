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

/// On the wire it is ``Wire``: the one declaration that writes it, reads it and gives its
/// schema. A raw point's value is the reading, a bucket's its mean (with its min, max and
/// count). `decimals` (absent for a float sensor) is what the profile's scale gives a
/// reading: readings, minima and maxima are exact to it, means to one more.
extension HistoryResult: Codable, RPCSchemaDescribed {
    struct Wire: Codable {
        var sensor: String
        var since: WireTimestamp
        var until: WireTimestamp
        var resolution: HistoryResolution
        var unmatched: [String]?
        var boards: [Board]

        struct Board: Codable {
            var address: BoardAddress
            var name: String
            var decimals: Int?
            var summary: Summary?
            var points: [Point]
        }

        struct Summary: Codable {
            var min: Double, mean: Double, max: Double, last: Double
            var lastTime: WireTimestamp
            var count: Int
        }

        struct Point: Codable {
            var time: WireTimestamp
            var value: Double
            var min: Double?, max: Double?, count: Int?
        }
    }

    public static let placeholder = HistoryResult(sensor: "", since: 0, until: 0, resolution: .raw, series: [])
    public static var jsonSchema: JSONValue {
        do {
            return try RPCShape.schema(of: Wire.self)
        } catch {
            preconditionFailure("history.read: \(error)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        let buckets = resolution != .raw
        let boards = series.map { series in
            Wire.Board(
                address: series.address, name: series.name ?? "", decimals: series.decimals,
                summary: series.summary.map {
                    Wire.Summary(
                        min: $0.min, mean: $0.mean, max: $0.max, last: $0.last, lastTime: WireTimestamp(milliseconds: $0.lastTime), count: $0.count)
                },
                points: series.points.map {
                    Wire.Point(
                        time: WireTimestamp(milliseconds: $0.time), value: $0.mean, min: buckets ? $0.min : nil, max: buckets ? $0.max : nil,
                        count: buckets ? $0.count : nil)
                })
        }
        try Wire(
            sensor: sensor, since: WireTimestamp(milliseconds: since), until: WireTimestamp(milliseconds: until), resolution: resolution,
            unmatched: unmatched.isEmpty ? nil : unmatched.map(\.description), boards: boards
        ).encode(to: encoder)
    }

    public init(from decoder: any Decoder) throws {
        let wire = try Wire(from: decoder)
        let series = wire.boards.map { board in
            HistorySeries(
                address: board.address, name: board.name.isEmpty ? nil : board.name, sensor: wire.sensor,
                points: board.points.map {
                    HistoryPoint(
                        time: $0.time.milliseconds, mean: $0.value, min: $0.min ?? $0.value, max: $0.max ?? $0.value, count: $0.count ?? 1)
                },
                latest: board.summary.map { HistoryPoint(time: $0.lastTime.milliseconds, value: $0.last) }, decimals: board.decimals)
        }
        self.init(
            sensor: wire.sensor, since: wire.since.milliseconds, until: wire.until.milliseconds, resolution: wire.resolution, series: series,
            unmatched: (wire.unmatched ?? []).compactMap { try? Selection.Selector(parsing: $0) })
    }
}
