import ArgumentParser
import BlectlCore
import FleetRPC
import FoundationEssentials
import JSONRPC

#if canImport(Glibc)
import Glibc
#endif

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show the kept readings of a sensor of the selected boards (all when none is named).",
        discussion: """
            A table of each board's minimum, mean, maximum and latest value over the span, with its trend \
            drawn across the terminal (ASCII when the locale is not UTF-8); --csv for a spreadsheet, --json \
            for the daemon's answer as it is.
            """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The boards (default: all).", completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Option(help: "The sensor, as the boards' profile names it.")
    var sensor = "temperature"

    @Option(help: "Where the span starts: a time back from now (90s, 30m, 2h, 7d, 2w) or an RFC 3339 time.")
    var since = "2h"

    @Option(help: "Where the span ends, written as --since (default: now).")
    var until: String?

    @Option(help: "raw (every reading), 5m or 1h (buckets); default: chosen from the span.")
    var resolution: String?

    @Flag(help: "One line per point as CSV: address,name,sensor,time,value,min,max,count.")
    var csv = false

    func validate() throws {
        if options.broker != nil { throw ValidationError("history reads one daemon's history: not with --broker.") }
        if csv && options.json { throw ValidationError("Choose one of --csv and --json.") }
        let now = Date()
        guard let start = HistoryText.time(since, now: now) else {
            throw ValidationError("--since: \"\(since)\" is neither a span like 30m, 2h or 7d nor an RFC 3339 time.")
        }
        if let until {
            guard let end = HistoryText.time(until, now: now) else {
                throw ValidationError("--until: \"\(until)\" is neither a span like 30m, 2h or 7d nor an RFC 3339 time.")
            }
            if end < start { throw ValidationError("--until comes before --since.") }
        }
        if let resolution, HistoryResolution(rawValue: resolution) == nil {
            throw ValidationError("--resolution: \"\(resolution)\"; choose raw, 5m or 1h.")
        }
    }

    func run() async throws {
        let session = try Session(options)
        let now = Date()
        let params = FleetMethods.HistoryRead.Params(
            select: try Selectors.selection(selectors, all: false) ?? .all, sensor: sensor,
            since: HistoryText.time(since, now: now)!, until: until.flatMap { HistoryText.time($0, now: now) },
            resolution: resolution.flatMap(HistoryResolution.init(rawValue:)))
        let reply = try await session.call(FleetMethods.HistoryRead.self, params)
        if options.json {
            Output.line(JSONText.pretty(try session.json(reply)))
            return
        }
        let result = try session.result(reply)
        if csv {
            Output.lines(HistoryText.csv(result))
            return
        }
        let unicode = HistoryText.unicode(environment: Output.environment)
        // The trend takes what the line has left after the figures (80 columns without a terminal).
        let figures = HistoryText.table(result, trendWidth: 0, unicode: unicode).render(legend: true).map(\.count).max() ?? 0
        let trendWidth = max(10, Self.terminalWidth() - figures - 2)
        let style = Output.style
        Output.lines(
            HistoryText.table(result, trendWidth: trendWidth, unicode: unicode).render(legend: !options.noLegend) { row, _, cell in
                row == nil ? style.bold(cell) : cell
            })
        if !options.noLegend {
            let boards = result.series.count
            Output.line(
                style.dim(
                    "\(result.sensor), \(result.resolution == .raw ? "every reading" : "\(result.resolution.rawValue) buckets"), "
                        + "\(WireTime.text(result.since)) to \(WireTime.text(result.until)), \(boards) board\(boards == 1 ? "" : "s")"))
        }
    }

    /// The terminal's width in columns (`COLUMNS`, else the terminal's own, else 80).
    static func terminalWidth() -> Int {
        if let columns = Output.environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        var size = winsize()
        if Output.isTerminal, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}
