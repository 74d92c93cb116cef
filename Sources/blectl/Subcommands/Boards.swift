import ArgumentParser
import BlectlCore
import FleetRPC
import FleetRPCClient
import JSONRPC

struct Boards: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "boards",
        abstract: "List the known boards: NAME ADDRESS STATE RSSI LED TEMP SEEN.",
        discussion: """
            --new lists the boards no alias names yet: a new set's first day is, for each of them, \
            blectl identify ADDRESS (it blinks) and blectl alias ADDRESS NAME.
            """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only these boards (default: all).", completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Flag(help: "Only the boards not named yet (no alias).")
    var new = false

    func run() async throws {
        let session = try Session(options)
        let reply = try await session.call(
            FleetMethods.BoardsList.self, .init(select: try Selectors.selection(selectors, all: false)))
        try BoardListOutput.print(reply, session: session, keep: new ? { $0.alias == nil } : nil)
    }
}

/// Prints a `boards.list` or `boards.scan` result.
enum BoardListOutput {
    /// `keep`: only the boards it says yes to (all when nil), in the table and the JSON.
    static func print(
        _ reply: FleetRPCReply<BoardsListResult>, session: Session, keep: ((BoardInfo) -> Bool)? = nil
    ) throws {
        var result = try session.result(reply)
        let kept = result.boards.map { keep?($0) ?? true }
        result.boards = zip(result.boards, kept).filter(\.1).map(\.0)
        if session.options.json {
            var json = try session.json(reply)
            if case .object(var object) = json, case .array(let boards)? = object["boards"], boards.count == kept.count {
                object["boards"] = .array(zip(boards, kept).filter(\.1).map(\.0))
                json = .object(object)
            }
            Output.line(JSONText.pretty(json))
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
