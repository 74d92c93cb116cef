import ArgumentParser
import FleetRPC

struct Disconnect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disconnect",
        abstract: "Disconnect the selected boards and stop reconnecting them.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The boards to disconnect.", completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Flag(help: "Disconnect every board.")
    var all = false

    func validate() throws {
        _ = try Selectors.required(selectors, all: all, example: "blectl disconnect nano-07")
    }

    func run() async throws {
        try await SelectCommand.run(
            FleetMethods.BoardsDisconnect.self, selectors: selectors, all: all, options: options, verb: "disconnected")
    }
}
