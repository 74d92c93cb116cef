import ArgumentParser
import FleetRPC

struct Forget: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Disconnect the selected boards and remove them from the daemon and BlueZ.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The boards to forget.", completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Flag(help: "Forget every board.")
    var all = false

    func validate() throws {
        _ = try Selectors.required(selectors, all: all, example: "blectl forget nano-07")
    }

    func run() async throws {
        try await SelectCommand.run(
            FleetMethods.BoardsForget.self, selectors: selectors, all: all, options: options, verb: "forgotten")
    }
}
