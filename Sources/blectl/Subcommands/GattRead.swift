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
        let method = FleetMethods.gattRead.name
        let params = GattReadParams(
            select: try Selectors.required(target.selectors, all: target.all, example: ""),
            service: target.service, characteristic: target.characteristic)
        let raw = try await session.call(method, params: params)
        try FleetOutput.print(raw, method: method, session: session, entry: GattOutcome.self, verb: "read") {
            Tables.gatt($0, verb: nil)
        }
    }
}
