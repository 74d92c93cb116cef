import ArgumentParser
import BlectlCore
import FleetRPC

struct Alias: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
        let method = FleetMethods.boardsAlias.name
        let raw = try await session.call(method, params: BoardsAliasParams(address: address.uppercased(), alias: name))
        if options.json {
            Output.line(JSONText.pretty(raw))
            return
        }
        let board = try session.decode(raw, as: BoardInfo.self, method: method)
        Output.lines(Tables.boards([board], now: Timestamp.now()).render(legend: !options.noLegend))
    }
}
