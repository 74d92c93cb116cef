import ArgumentParser
import BlectlCore
import FleetRPC
import FleetRPCClient

struct Boards: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "boards",
        abstract: "List the known boards: NAME ADDRESS STATE RSSI LED TEMP SEEN.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only these boards (default: all).", completion: BoardCompletion.kind)
    var selectors: [String] = []

    func run() async throws {
        let session = try Session(options)
        let reply = try await session.call(
            FleetMethods.BoardsList.self, .init(select: try Selectors.selection(selectors, all: false)))
        try BoardListOutput.print(reply, session: session)
    }
}

/// Prints a `boards.list` or `boards.scan` result.
enum BoardListOutput {
    static func print(_ reply: FleetRPCReply<BoardsListResult>, session: Session) throws {
        let result = try session.result(reply)
        if session.options.json {
            Output.line(JSONText.pretty(try session.json(reply)))
            return
        }
        let style = Output.style
        let table = Tables.boards(result.boards, now: Timestamp.now())
        Output.lines(table.render(legend: !session.options.noLegend) { row, column, cell in
            guard let row else { return style.bold(cell) }
            guard column == 2 else { return cell }
            switch result.boards[row].state {
            case .ready: return style.good(cell)
            case .absent: return style.dim(cell)
            case .connecting, .resolving, .disconnecting, .backingOff, .waitingForAdapter: return style.warn(cell)
            case .failed: return style.bad(cell)
            case .discovered, .standby: return cell
            }
        })
        if !session.options.noLegend {
            let count = result.boards.count
            Output.line("\(count) \(count == 1 ? "board" : "boards")")
        }
    }
}
