import ArgumentParser
import BlectlCore
import FleetRPC
import JSONRPC

struct Connect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Connect the selected boards and keep them connected.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The boards to connect.", completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Flag(help: "Connect every board.")
    var all = false

    func validate() throws {
        _ = try Selectors.required(selectors, all: all, example: "blectl connect nano-07")
    }

    func run() async throws {
        try await SelectCommand.run(
            FleetMethods.BoardsConnect.self, selectors: selectors, all: all, options: options, verb: "connected")
    }
}

/// The commands that take a selection and report one outcome per board.
enum SelectCommand {
    static func run<Method: RPCMethod>(
        _ method: Method.Type, selectors: [String], all: Bool, options: GlobalOptions, verb: String
    ) async throws where Method.Params == BoardSelectParams, Method.Result == FleetResult<Done> {
        let session = try Session(options)
        let selection = try Selectors.required(selectors, all: all, example: "")
        let reply = try await session.call(method, BoardSelectParams(select: selection))
        try FleetOutput.print(reply, session: session, verb: verb) {
            Tables.outcomes($0, verb: verb)
        }
    }
}
