import ArgumentParser
import BlectlCore
import FleetRPC

/// `blectl --broker URL led on|off --all` and `blectl --broker URL temp`: one table of every
/// gateway's boards, with a GATEWAY column, the same summary line and exit status as
/// against one daemon. Gateways that did not answer are named.
enum BrokerCommands {
    static func led(_ options: GlobalOptions, broker: String, on: Bool) async throws {
        let session = try BrokerSession(options, broker: broker)
        try await session.connect()
        let verb = on ? "on" : "off"
        let (answers, silent) = try await session.setLEDs(on: on, timeoutMs: nil)
        let rows = answers.flatMap { answer in answer.result.outcomes.map { (gateway: answer.gateway, outcome: $0) } }
        let ok = rows.count(where: \.outcome.succeeded)
        let pending = rows.count(where: { $0.outcome.pending == true })
        if options.json {
            struct Totals: Encodable {
                var ok: Int
                var failed: Int
            }
            struct Answer: Encodable {
                var gateways: [String: FleetResult<Done>]
                var silent: [String]
                var totals: Totals
            }
            let gateways = Dictionary(answers.map { ($0.gateway, $0.result) }, uniquingKeysWith: { _, last in last })
            Output.line(try JSONText.pretty(Answer(gateways: gateways, silent: silent, totals: Totals(ok: ok, failed: rows.count - ok))))
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
            /// A board as `boards.list` gives it, with its gateway.
            struct Board: Encodable {
                var board: BoardInfo
                var gateway: String
                func encode(to encoder: any Encoder) throws {
                    try board.encode(to: encoder)
                    var container = encoder.container(keyedBy: Key.self)
                    try container.encode(gateway, forKey: .gateway)
                }
                enum Key: CodingKey { case gateway }
            }
            struct Answer: Encodable {
                var boards: [Board]
                var offline: [String]
            }
            Output.line(try JSONText.pretty(Answer(boards: boards.map { Board(board: $0.board, gateway: $0.gateway) }, offline: offline)))
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
