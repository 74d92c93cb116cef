public import FleetRPC
public import FoundationEssentials

/// How `blectl history` shows a history: a table of each board's figures with its trend as
/// a sparkline, CSV for a spreadsheet, and the span a person writes (`2h`, `7d`, a time).
public enum HistoryText {
    /// Eight levels, lowest first; the ASCII ones for a locale that is not UTF-8.
    static let unicodeLevels: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
    static let asciiLevels: [Character] = ["_", ".", "-", "~", "=", "+", "*", "#"]

    /// Whether the locale's character set is UTF-8 (`LC_ALL`, else `LC_CTYPE`, else `LANG`).
    public static func unicode(environment: [String: String]) -> Bool {
        let locale = [environment["LC_ALL"], environment["LC_CTYPE"], environment["LANG"]]
            .compactMap { $0 }.first { !$0.isEmpty } ?? ""
        let lowered = locale.lowercased()
        return lowered.contains("utf-8") || lowered.contains("utf8")
    }

    /// `values` drawn `width` characters wide: each character the mean of the values that
    /// fall in its share, its height from the lowest (`▁`) to the highest (`█`) of them all.
    /// Fewer values than `width` take one character each. Empty for no values.
    public static func sparkline(_ values: [Double], width: Int, unicode: Bool) -> String {
        guard !values.isEmpty, width > 0 else { return "" }
        let levels = unicode ? unicodeLevels : asciiLevels
        let count = min(width, values.count)
        var bins: [Double] = []
        bins.reserveCapacity(count)
        for bin in 0..<count {
            let start = bin * values.count / count
            let end = max(start + 1, (bin + 1) * values.count / count)
            let slice = values[start..<end]
            bins.append(slice.reduce(0, +) / Double(slice.count))
        }
        let low = bins.min()!
        let high = bins.max()!
        return String(
            bins.map { value in
                guard high > low else { return levels[levels.count / 2 - 1] }
                let position = Int(((value - low) / (high - low) * Double(levels.count - 1)).rounded())
                return levels[min(max(position, 0), levels.count - 1)]
            })
    }

    /// NAME ADDRESS MIN MEAN MAX LAST TREND: one row per board; `-` where nothing is kept.
    /// The trend is `trendWidth` characters at most.
    public static func table(_ result: HistoryResult, trendWidth: Int, unicode: Bool) -> TextTable {
        TextTable(
            columns: [
                .init("NAME"), .init("ADDRESS"), .init("MIN", .right), .init("MEAN", .right), .init("MAX", .right),
                .init("LAST", .right), .init("TREND"),
            ],
            rows: result.series.map { series in
                let name = series.name ?? ""
                guard let summary = series.summary else {
                    return [name, series.address.rawValue, "-", "-", "-", "-", "no readings kept"]
                }
                let decimals = series.decimals
                return [
                    name, series.address.rawValue, number(summary.min, decimals),
                    number(summary.mean, series.decimals(ofMeanOver: summary.count)),
                    number(summary.max, decimals), number(summary.last, decimals),
                    sparkline(series.points.map(\.mean), width: trendWidth, unicode: unicode),
                ]
            })
    }

    /// A figure as the table shows it: with the decimals its sensor's scale gives it
    /// (`1001.0`), a float's with at most two.
    static func number(_ value: Double, _ decimals: Int? = nil) -> String {
        if let decimals { return SensorNumber.text(value, decimals: decimals) }
        return SensorNumber.text((value * 100).rounded() / 100)
    }

    /// One line per point, after a header: `address,name,sensor,time,value,min,max,count`
    /// (RFC 4180 quoting where a name needs it). A scaled sensor's figures have the decimals
    /// its scale gives them (`1001.0`), a bucket's mean one more; a float's the fewest that give it.
    public static func csv(_ result: HistoryResult) -> [String] {
        var lines = ["address,name,sensor,time,value,min,max,count"]
        for series in result.series {
            let prefix = [series.address.rawValue, quoted(series.name ?? ""), quoted(series.sensor)].joined(separator: ",")
            for point in series.points {
                lines.append(
                    [
                        prefix, WireTime.text(point.time),
                        SensorNumber.text(point.mean, decimals: series.decimals(ofMeanOver: point.count)),
                        SensorNumber.text(point.min, decimals: series.decimals),
                        SensorNumber.text(point.max, decimals: series.decimals), String(point.count),
                    ].joined(separator: ","))
            }
        }
        return lines
    }

    static func quoted(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
        return "\"" + field.replacing("\"", with: "\"\"") + "\""
    }

    /// A point in time as a person writes it for `--since`/`--until`: a span back from
    /// `now` (`90s`, `30m`, `2h`, `7d`, `2w`) or an RFC 3339 time. Milliseconds since the
    /// epoch; `nil` when it is neither.
    public static func time(_ text: String, now: Date) -> Int64? {
        let trimmed = String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        if let unit = trimmed.last, let amount = Double(trimmed.dropLast()), amount >= 0, amount.isFinite {
            let seconds: Double? =
                switch unit {
                case "s": 1.0
                case "m": 60.0
                case "h": 3600.0
                case "d": 86_400.0
                case "w": 604_800.0
                default: nil
                }
            if let seconds { return WireTime.milliseconds(now.addingTimeInterval(-amount * seconds)) }
        }
        return WireTime.date(trimmed).map(WireTime.milliseconds)
    }
}
