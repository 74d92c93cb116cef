import ArgumentParser
import BlectlCore
import FleetRPC
import FleetRPCClient

/// Prints the result of a fleet-wide call (a table and a summary line, or the JSON result)
/// and ends with exit status 1 when any board failed.
enum FleetOutput {
    static func print<Entry: Sendable & Hashable & Codable>(
        _ reply: FleetRPCReply<FleetResult<Entry>>, session: Session, verb: String, table: ([Entry]) -> TextTable
    ) throws {
        let result = try session.result(reply)
        if session.options.json {
            Output.line(JSONText.pretty(try session.json(reply)))
        } else {
            let style = Output.style
            let rendered = table(result.results).render(legend: !session.options.noLegend) { row, column, cell in
                guard row != nil else { return style.bold(cell) }
                return column == 3 && (cell.hasPrefix("failed") || cell.hasPrefix("pending")) ? style.bad(cell) : cell
            }
            Output.lines(rendered)
            if !session.options.noLegend {
                let pending = result.results.filter { ($0 as? BoardOutcome)?.pending == true }.count
                let summary = Units.summary(
                    ok: result.totals.ok, failed: result.totals.failed, pending: pending, verb: verb)
                Output.line(result.totals.failed > 0 ? style.bad(summary) : summary)
            }
        }
        try Session.finish(result.totals)
    }
}
