import ArgumentParser
import BlectlCore
import FleetRPC

struct Scan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
        let method = FleetMethods.boardsScan.name
        let raw = try await session.call(method, params: BoardsScanParams(seconds: seconds), extraSeconds: seconds)
        try BoardListOutput.print(raw, method: method, session: session)
    }
}
