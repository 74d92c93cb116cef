import ArgumentParser
import BlectlCore
import FleetRPC
import JSONRPC
import FleetRPCClient

struct GattNotify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify",
        abstract: "Print the values the selected boards notify on a characteristic, one line each.",
        discussion: "Needs a daemon that serves gatt.notify.")

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: GattTarget

    @Option(help: ArgumentHelp("Stop after this many values (default: run until interrupted).", valueName: "n"))
    var count: Int?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1, not \(count).") }
    }

    func run() async throws {
        let session = try Session(options)
        let params = FleetMethods.GattNotify.Params(
            select: try target.boards.selection(example: ""),
            service: target.service, characteristic: target.characteristic)
        let notifications = session.client.notifications()
        let result = try session.result(try await session.call(FleetMethods.GattNotify.self, params))
        for outcome in result.outcomes where !outcome.succeeded {
            Output.error("blectl: \(outcome.name ?? "") (\(outcome.address)): \(Tables.failure(outcome.error))")
        }
        guard result.succeededCount > 0 else { throw ExitCode(ExitStatus.failed.rawValue) }
        var received = 0
        do {
            for try await notification in notifications where notification.method == GattValueNotification.method {
                guard let params = notification.params(as: JSONValue.self) else { continue }
                if options.json {
                    Output.line(JSONText.compact(params))
                } else if let value = notification.params(as: GattValueNotification.self) {
                    let time = Timestamp.parse(value.time).map(Timestamp.clock) ?? value.time
                    Output.line("\(time)  \(value.name)  \(value.address)  \(value.value)")
                }
                Output.flush()
                received += 1
                if let count, received >= count {
                    try Session.finish(result)
                    return
                }
            }
            throw Session.fail(.connectionClosed(method: nil))
        } catch let error as FleetRPCClientError {
            throw Session.fail(error)
        }
    }
}
