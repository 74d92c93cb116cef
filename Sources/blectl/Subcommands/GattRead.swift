import ArgumentParser
import BlectlCore
import FleetRPC

struct GattRead: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read", abstract: "Read a characteristic of the selected boards; values are shown as hex.")

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: GattTarget

    func run() async throws {
        let session = try Session(options)
        let params = FleetMethods.GattRead.Params(
            select: try target.boards.selection(example: ""),
            service: target.service, characteristic: target.characteristic)
        let reply = try await session.call(FleetMethods.GattRead.self, params)
        try FleetOutput.print(reply, session: session, verb: "read") {
            Tables.gatt($0)
        }
    }
}
