import ArgumentParser
import BlectlCore
import FleetRPC
import FleetRPCClient

struct Scan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Scan for boards, then list every board seen.")

    @OptionGroup var options: GlobalOptions

    @Option(help: ArgumentHelp("How long to scan (0.1 to 300).", valueName: "seconds"))
    var seconds: Double = 5

    func validate() throws {
        guard seconds >= 0.1, seconds <= 300 else {
            throw ValidationError("--seconds must be between 0.1 and 300, not \(seconds).")
        }
    }

    func run() async throws {
        let session = try Session(options)
        let reply = try await session.call(FleetMethods.BoardsScan.self, .init(seconds: seconds), extraSeconds: seconds)
        try BoardListOutput.print(reply, session: session)
    }
}
