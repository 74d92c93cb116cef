import ArgumentParser
import BlectlCore
import FleetRPC
import FleetRPCClient

/// Prints the result of a fleet-wide call (a table and a summary line, or the JSON result)
/// and ends with exit status 1 when any board failed.
enum FleetOutput {
    static func print<Value: Sendable & Codable>(
        _ reply: FleetRPCReply<FleetResult<Value>>, session: Session, verb: String, table: ([BoardOutcome<Value>]) -> TextTable
    ) throws {
        let result = try session.result(reply)
        if session.options.json {
            Output.line(JSONText.pretty(try session.json(reply)))
        } else {
            let style = Output.style
            let rendered = table(result.outcomes).render(legend: !session.options.noLegend) { row, column, cell in
                guard row != nil else { return style.bold(cell) }
                return column == 3 && (cell.hasPrefix("failed") || cell.hasPrefix("pending")) ? style.bad(cell) : cell
            }
            Output.lines(rendered)
            if !session.options.noLegend {
                let pending = result.outcomes.count { $0.pending == true }
                let summary = Units.summary(
                    ok: result.succeededCount, failed: result.failedCount, pending: pending, verb: verb)
                Output.line(result.failedCount > 0 ? style.bad(summary) : summary)
            }
        }
        try Session.finish(result)
    }
}
