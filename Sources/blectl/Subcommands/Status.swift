import ArgumentParser
import BlectlCore
import FleetRPC

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the daemon's version, uptime, adapter and BlueZ state, and board counts.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let session = try Session(options)
        let method = FleetMethods.daemonStatus.name
        let raw = try await session.call(method)
        if options.json {
            Output.line(JSONText.pretty(raw))
        } else {
            Output.lines(Tables.status(try session.decode(raw, as: DaemonStatus.self, method: method)))
        }
    }
}
