import ArgumentParser
import BlectlCore
import FleetRPC

struct Led: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "led",
        abstract: "Switch the LED of the selected boards on or off.",
        discussion: "Naming no board is an error; pass --all to switch every board.")

    enum State: String, ExpressibleByArgument, CaseIterable {
        case on
        case off
    }

    @OptionGroup var options: GlobalOptions

    @Argument(help: ArgumentHelp("on or off.", valueName: "on|off"))
    var state: State

    @Argument(help: "The boards to switch.", completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Flag(help: "Switch every board.")
    var all = false

    func validate() throws {
        if options.broker != nil {
            guard all, selectors.isEmpty else {
                throw ValidationError("With --broker, switch every board of every gateway: blectl --broker URL led \(state.rawValue) --all.")
            }
            return
        }
        _ = try Selectors.required(selectors, all: all, example: "blectl led \(state.rawValue) nano-07, blectl led \(state.rawValue) --all")
    }

    func run() async throws {
        if let broker = options.broker {
            try await BrokerCommands.led(options, broker: broker, on: state == .on)
            return
        }
        let session = try Session(options)
        let selection = try Selectors.required(selectors, all: all, example: "")
        let reply = try await session.call(FleetMethods.LedSet.self, .init(select: selection, on: state == .on))
        try FleetOutput.print(reply, session: session, verb: state.rawValue) { Tables.outcomes($0, verb: state.rawValue) }
    }
}
