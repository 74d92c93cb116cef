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

    @Argument(help: "The board's Bluetooth address (AA:BB:CC:DD:EE:FF).")
    var address: String

    @Argument(help: "The alias, or \"\" to remove it.")
    var name: String

    func validate() throws {
        guard BoardAddress.isValid(address) else {
            throw ValidationError("\(JSONValue.string(address)) is not a Bluetooth address; write it as AA:BB:CC:DD:EE:FF.")
        }
    }

    func run() async throws {
        let session = try Session(options)
        let reply = try await session.call(FleetMethods.BoardsAlias.self, .init(address: address.uppercased(), alias: name))
        if options.json {
            Output.line(JSONText.pretty(try session.json(reply)))
            return
        }
        let board = try session.result(reply)
        Output.lines(Tables.boards([board], now: Timestamp.now()).render(legend: !options.noLegend))
    }
}
