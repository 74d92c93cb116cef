import ArgumentParser
import BlectlCore
import FleetRPC

struct Led: AsyncParsableCommand, BoardsAction {
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

    @OptionGroup var boards: SelectedBoards<Led>
    static let action = "switch"

    func validate() throws {
        if options.broker != nil {
            guard boards.all, boards.selectors.isEmpty else {
                throw ValidationError("With --broker, switch every board of every gateway: blectl --broker URL led \(state.rawValue) --all.")
            }
            return
        }
        _ = try boards.selection(example: "blectl led \(state.rawValue) nano-07, blectl led \(state.rawValue) --all")
    }

    func run() async throws {
        if let broker = options.broker {
            try await BrokerCommands.led(options, broker: broker, on: state == .on)
            return
        }
        let session = try Session(options)
        let reply = try await session.call(FleetMethods.LedSet.self, .init(select: try boards.selection(example: ""), on: state == .on))
        try FleetOutput.print(reply, session: session, verb: state.rawValue) { Tables.outcomes($0, verb: state.rawValue) }
    }
}
