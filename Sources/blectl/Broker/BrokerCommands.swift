import ArgumentParser
import BlectlCore
import FleetRPC
import Foundation

/// `blectl --broker URL led on|off --all` and `blectl --broker URL temp`: one table of every
/// gateway's boards, with a GATEWAY column, the same summary line and exit status as
/// against one daemon. Gateways that did not answer are named.
enum BrokerCommands {
    static func led(_ options: GlobalOptions, broker: String, on: Bool) async throws {
        let session = try BrokerSession(options, broker: broker)
        try await session.connect()
        let verb = on ? "on" : "off"
        let (answers, silent) = try await session.setLEDs(on: on, timeoutMs: nil)
        let rows = answers.flatMap { answer in answer.result.results.map { (gateway: answer.gateway, outcome: $0) } }
        let ok = rows.count(where: \.outcome.ok)
        let pending = rows.count(where: { $0.outcome.pending == true })
        if options.json {
            var object: [String: Any] = [:]
            var gateways: [String: Any] = [:]
            for answer in answers {
                gateways[answer.gateway] = try JSONSerialization.jsonObject(with: JSONEncoder().encode(answer.result))
            }
            object["gateways"] = gateways
            object["silent"] = silent
            object["totals"] = ["ok": ok, "failed": rows.count - ok]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            Output.line(String(decoding: data, as: UTF8.self))
        } else {
            let style = Output.style
            let table = Tables.outcomes(byGateway: rows, verb: verb).render(legend: !options.noLegend) { row, column, cell in
                guard row != nil else { return style.bold(cell) }
                return column == 4 && (cell.hasPrefix("failed") || cell.hasPrefix("pending")) ? style.bad(cell) : cell
            }
            Output.lines(table)
            if !options.noLegend {
                let summary = Units.summary(ok: ok, failed: rows.count - ok, pending: pending, verb: verb)
                    + ", \(answers.count) \(answers.count == 1 ? "gateway" : "gateways")"
                Output.line(ok < rows.count || !silent.isEmpty ? style.bad(summary) : summary)
            }
        }
        for gateway in silent {
            Output.error("blectl: gateway \(gateway) did not answer in time (is its bridge allowed commands?).")
        }
        if ok < rows.count || !silent.isEmpty { throw ExitCode(ExitStatus.failed.rawValue) }
    }

    static func temp(_ options: GlobalOptions, broker: String) async throws {
        let session = try BrokerSession(options, broker: broker)
        try await session.connect()
        let snapshot = try await session.snapshot()
        let offline = snapshot.gateways.filter { !$0.value }.keys.sorted()
        let boards = snapshot.boards.filter { snapshot.gateways[$0.gateway] == true }
        if options.json {
            var object: [String: Any] = [:]
            object["boards"] = try boards.map { entry -> Any in
                var board = try JSONSerialization.jsonObject(with: JSONEncoder().encode(entry.board)) as? [String: Any] ?? [:]
                board["gateway"] = entry.gateway
                return board
            }
            object["offline"] = offline
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            Output.line(String(decoding: data, as: UTF8.self))
        } else {
            let style = Output.style
            Output.lines(Tables.temperatures(byGateway: boards).render(legend: !options.noLegend) { row, _, cell in
                row == nil ? style.bold(cell) : cell
            })
            if !options.noLegend {
                let read = boards.count(where: { $0.board.temperature != nil })
                let gateways = Set(boards.map(\.gateway)).count
                Output.line("\(read)/\(boards.count) boards with a temperature on \(gateways) \(gateways == 1 ? "gateway" : "gateways")")
            }
        }
        for gateway in offline {
            Output.error("blectl: gateway \(gateway) is offline; its boards are not shown.")
        }
        if snapshot.gateways.isEmpty {
            Output.error("blectl: no gateway publishes on the MQTT broker at \(session.url) under \(options.topicPrefix)/.")
            throw ExitCode(ExitStatus.failed.rawValue)
        }
        if !offline.isEmpty { throw ExitCode(ExitStatus.failed.rawValue) }
    }
}
