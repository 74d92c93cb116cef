import ArgumentParser
import BlectlCore
import FleetRPC

struct Read: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Show a sensor of the selected boards (all when none is named), as their profile declares it.",
        discussion: """
            SENSOR is a sensor's name in the boards' profile: temperature for the built-in one, or one a \
            profile file adds (blefleet-profile(5)), like humidity. Without --fresh a reading the daemon holds \
            is shown if it is at most 60 s old.
            """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The sensor, like temperature or humidity.")
    var sensor: String

    @OptionGroup var boards: HeldReadings

    func validate() throws {
        if options.broker != nil {
            throw ValidationError("read works on the daemon's socket, not with --broker.")
        }
    }

    func run() async throws {
        let session = try Session(options)
        let params = FleetMethods.SensorRead.Params(select: try boards.selection(), sensor: sensor, maxAgeMs: boards.maxAgeMs)
        let reply = try await session.call(FleetMethods.SensorRead.self, params)
        try FleetOutput.print(reply, session: session, verb: "read") { Tables.readings($0, sensor: sensor) }
    }
}

struct Switch: AsyncParsableCommand, BoardsAction {
    static let configuration = CommandConfiguration(
        commandName: "switch",
        abstract: "Switch a switch of the selected boards on or off, as their profile declares it.",
        discussion: "`blectl switch led on nano-07` is `blectl led on nano-07`. Naming no board is an error; pass --all.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The switch, like led.")
    var name: String

    @Argument(help: ArgumentHelp("on or off.", valueName: "on|off"))
    var state: Led.State

    @OptionGroup var boards: SelectedBoards<Switch>
    static let action = "switch"

    func validate() throws {
        if options.broker != nil {
            throw ValidationError("switch works on the daemon's socket, not with --broker.")
        }
        _ = try boards.selection(example: "blectl switch \(name) \(state.rawValue) nano-07, blectl switch \(name) \(state.rawValue) --all")
    }

    func run() async throws {
        let session = try Session(options)
        let selection = try boards.selection(example: "")
        let reply = try await session.call(
            FleetMethods.SwitchSet.self, .init(select: selection, switch: name, on: state == .on))
        try FleetOutput.print(reply, session: session, verb: state.rawValue) { Tables.outcomes($0, verb: state.rawValue) }
    }
}
