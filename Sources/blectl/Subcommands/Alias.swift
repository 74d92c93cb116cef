import ArgumentParser
import BlectlCore
import FleetRPC
import JSONRPC
import FleetRPCClient

struct Alias: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alias",
        abstract: "Give a board an alias that selectors can use; an empty NAME removes it.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The board's Bluetooth address (AA:BB:CC:DD:EE:FF).", transform: { text in
        guard let address = BoardAddress(text) else {
            throw ValidationError("\(JSONValue.string(text)) is not a Bluetooth address; write it as AA:BB:CC:DD:EE:FF.")
        }
        return address
    })
    var address: BoardAddress

    @Argument(help: "The alias, or \"\" to remove it.")
    var name: String

    func run() async throws {
        let session = try Session(options)
        let reply = try await session.call(FleetMethods.BoardsAlias.self, .init(address: address, alias: name))
        if options.json {
            Output.line(JSONText.pretty(try session.json(reply)))
            return
        }
        let board = try session.result(reply)
        Output.lines(Tables.boards([board], now: Timestamp.now()).render(legend: !options.noLegend))
    }
}
