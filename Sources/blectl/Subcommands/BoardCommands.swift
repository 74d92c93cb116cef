import ArgumentParser
import BlectlCore
import FleetRPC
import JSONRPC

/// A command that does one thing to the selected boards and reports one outcome per board:
/// connect, disconnect, forget, identify. Each declares its method, its words and nothing
/// else: its name is the method's last word, its abstract the method's summary, and the
/// arguments, the check and the call are these, once.
protocol BoardsCommand: BoardsAction, AsyncParsableCommand {
    associatedtype Method: RPCMethod where Method.Result == FleetResult<Done>
    /// The fleet method it calls.
    static var method: Method.Type { get }
    /// The word of each board's outcome: "connected".
    static var verb: String { get }
    /// The method's params for `selection`.
    static func params(_ selection: Selection) -> Method.Params

    var options: GlobalOptions { get }
    var boards: SelectedBoards<Self> { get }
}

extension BoardsCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: String(Method.name.split(separator: ".").last!), abstract: Method.descriptor.summary)
    }

    func validate() throws {
        _ = try boards.selection(example: "blectl \(Self.configuration.commandName ?? Self.action) nano-07")
    }

    func run() async throws {
        let session = try Session(options)
        let reply = try await session.call(Self.method, Self.params(try boards.selection(example: "")))
        try FleetOutput.print(reply, session: session, verb: Self.verb) { Tables.outcomes($0, verb: Self.verb) }
    }
}

extension BoardsCommand where Method.Params == BoardSelectParams {
    static func params(_ selection: Selection) -> BoardSelectParams { BoardSelectParams(select: selection) }
}

extension BoardsCommand where Method.Params == BoardsTimedParams {
    static func params(_ selection: Selection) -> BoardsTimedParams { BoardsTimedParams(select: selection) }
}

/// A command that acts on selected boards.
protocol BoardsAction {
    /// What it does to a board, as in "The boards to connect." (lowercase).
    static var action: String { get }
}

/// The boards a command acts on: names, addresses, aliases or globs, or `--all`.
struct SelectedBoards<Command: BoardsAction>: ParsableArguments {
    @Argument(help: ArgumentHelp("The boards to \(Command.action)."), completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Flag(help: ArgumentHelp("\(Command.action.prefix(1).uppercased() + Command.action.dropFirst()) every board."))
    var all = false

    /// The selection; naming none without `--all` is an error that shows `example`.
    func selection(example: String) throws -> Selection {
        try Selectors.required(selectors, all: all, example: example)
    }
}

struct Connect: BoardsCommand {
    static let method = FleetMethods.BoardsConnect.self, action = "connect", verb = "connected"
    @OptionGroup var options: GlobalOptions
    @OptionGroup var boards: SelectedBoards<Connect>
}

struct Disconnect: BoardsCommand {
    static let method = FleetMethods.BoardsDisconnect.self, action = "disconnect", verb = "disconnected"
    @OptionGroup var options: GlobalOptions
    @OptionGroup var boards: SelectedBoards<Disconnect>
}

struct Forget: BoardsCommand {
    static let method = FleetMethods.BoardsForget.self, action = "forget", verb = "forgotten"
    @OptionGroup var options: GlobalOptions
    @OptionGroup var boards: SelectedBoards<Forget>
}

struct Identify: BoardsCommand {
    static let configuration = CommandConfiguration(
        commandName: "identify", abstract: method.descriptor.summary,
        discussion: """
            To name a new set of boards: blectl boards --new lists the ones not named yet; for each, \
            blectl identify ADDRESS blinks it, and blectl alias ADDRESS NAME names it.
            """)
    static let method = FleetMethods.BoardsIdentify.self, action = "blink", verb = "identified"
    @OptionGroup var options: GlobalOptions
    @OptionGroup var boards: SelectedBoards<Identify>
}
