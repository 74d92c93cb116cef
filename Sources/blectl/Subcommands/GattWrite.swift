import ArgumentParser
import BlectlCore
import FleetRPC

struct GattWrite: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write", abstract: "Write bytes (hex) to a characteristic of the selected boards.")

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: GattTarget

    @Option(help: ArgumentHelp("The bytes to write, as hex (e.g. 01).", valueName: "hex"), transform: { text in
        guard let bytes = HexBytes.decode(text), !bytes.isEmpty else {
            throw ValidationError("--value needs an even number of hex digits, such as 01 or 0a1b, not \"\(text)\".")
        }
        return bytes
    })
    var value: [UInt8]

    @Flag(name: .customLong("without-response"), help: "Write without response.")
    var withoutResponse = false

    func run() async throws {
        let session = try Session(options)
        let params = FleetMethods.GattWrite.Params(
            select: try target.boards.selection(example: ""),
            service: target.service, characteristic: target.characteristic, value: value,
            withResponse: withoutResponse ? false : nil)
        let reply = try await session.call(FleetMethods.GattWrite.self, params)
        try FleetOutput.print(reply, session: session, verb: "written") {
            Tables.gatt($0, verb: "written")
        }
    }
}
