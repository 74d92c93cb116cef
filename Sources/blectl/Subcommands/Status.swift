import ArgumentParser
import BlectlCore
import FleetRPC
import FleetRPCClient

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the daemon's version, uptime, adapter and BlueZ state, and board counts.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let session = try Session(options)
        let reply = try await session.call(FleetMethods.DaemonStatus.self)
        if options.json {
            Output.line(JSONText.pretty(try session.json(reply)))
        } else {
            Output.lines(Tables.status(try session.result(reply)))
        }
    }
}
