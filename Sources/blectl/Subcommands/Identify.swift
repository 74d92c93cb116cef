import ArgumentParser
import BlectlCore
import FleetRPC

struct Identify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identify",
        abstract: "Make the selected boards show themselves: the LED blinks for a few seconds, then is as it was wanted.",
        discussion: """
            To name a new set of boards: blectl boards --new lists the ones not named yet; for each, \
            blectl identify ADDRESS blinks it, and blectl alias ADDRESS NAME names it.
            """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The boards to blink.", completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Flag(help: "Blink every board.")
    var all = false

    func validate() throws {
        _ = try Selectors.required(selectors, all: all, example: "blectl identify nano-07")
    }

    func run() async throws {
        let session = try Session(options)
        let selection = try Selectors.required(selectors, all: all, example: "")
        let reply = try await session.call(FleetMethods.BoardsIdentify.self, .init(select: selection))
        try FleetOutput.print(reply, session: session, verb: "identified") { Tables.outcomes($0, verb: "identified") }
    }
}
