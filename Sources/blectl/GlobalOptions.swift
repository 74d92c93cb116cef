import ArgumentParser
import FleetRPCClient

/// The options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The daemon's socket (default: $BLEFLEET_SOCKET, else \(FleetRPCClient.defaultSocketPath)).",
            valueName: "path"),
        completion: .file())
    var socket: String?

    @Flag(name: .long, help: "Print JSON instead of tables (one document; one object per line for live output).")
    var json = false

    @Flag(name: .customLong("no-legend"), help: "Leave out table headers and summary lines.")
    var noLegend = false

    @Option(name: .long, help: ArgumentHelp("How long to wait for the daemon's reply.", valueName: "seconds"))
    var timeout: Double = 30

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Act on every gateway on this MQTT broker instead of one daemon (led and temp only).",
            valueName: "mqtt://host[:port]"))
    var broker: String?

    @Option(name: .long, help: ArgumentHelp("The gateways' topic prefix on the broker.", valueName: "prefix"))
    var topicPrefix: String = "blefleet"

    @Option(name: .long, help: ArgumentHelp("The user name to log in to the broker with.", valueName: "name"))
    var brokerUser: String?

    @Option(
        name: .long, help: ArgumentHelp("A file whose first line is the broker password.", valueName: "path"),
        completion: .file())
    var brokerPasswordFile: String?

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else {
            throw ValidationError("--timeout must be more than 0 and at most 86400 seconds, not \(timeout).")
        }
        if let socket, socket.isEmpty { throw ValidationError("--socket needs a path.") }
        if let broker, broker.isEmpty { throw ValidationError("--broker needs a URL like mqtt://broker.lan.") }
        if brokerPasswordFile != nil, brokerUser == nil {
            throw ValidationError("--broker-password-file needs --broker-user.")
        }
    }

    /// The socket to use: `--socket`, else `BLEFLEET_SOCKET`, else the default.
    var socketPath: String {
        Self.socketPath(option: socket, environment: Output.environment)
    }

    static func socketPath(option: String?, environment: [String: String]) -> String {
        if let option, !option.isEmpty { return option }
        if let variable = environment["BLEFLEET_SOCKET"], !variable.isEmpty { return variable }
        return FleetRPCClient.defaultSocketPath
    }

    var replyTimeout: Duration { .milliseconds(Int64(timeout * 1000)) }
}
