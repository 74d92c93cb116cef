import ArgumentParser
import BlectlCore
import FleetRPC
import JSONRPC
import FleetRPCClient

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the daemon's events as they happen, one line each, until interrupted.")

    @OptionGroup var options: GlobalOptions

    @Option(
        name: .customLong("topic"),
        help: ArgumentHelp(
            "Only events of this topic (\(EventTopic.allCases.map(\.rawValue).joined(separator: ", "))); repeatable.",
            valueName: "topic"),
        completion: .list(EventTopic.allCases.map(\.rawValue)),
        transform: { text in
            guard let topic = EventTopic(rawValue: text) else {
                throw ValidationError(
                    "\"\(text)\" is not a topic; one of \(EventTopic.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            return topic
        })
    var topics: [EventTopic] = []

    func run() async throws {
        let session = try Session(options)
        var names: [String: String] = [:]
        if !options.json {
            for board in try session.result(try await session.call(FleetMethods.BoardsList.self, .init())).boards {
                names[board.address.rawValue] = Tables.displayName(name: board.name, alias: board.alias)
            }
        }
        let notifications = session.client.notifications()
        _ = try await session.call(
            FleetMethods.EventsSubscribe.self, EventsSubscribeParams(topics: topics.isEmpty ? nil : topics))
        do {
            for try await notification in notifications where notification.method == EventNotification.method {
                guard let params = notification.params(as: JSONValue.self) else { continue }
                if options.json {
                    Output.line(JSONText.compact(params))
                } else {
                    if params["topic"] == .string(EventTopic.boards.rawValue), let address = params["address"]?.stringValue,
                        let name = params["data"]?["name"]?.stringValue
                    {
                        names[address] = Tables.displayName(name: name, alias: params["data"]?["alias"]?.stringValue)
                    }
                    Output.line(EventText.line(params, names: names) ?? JSONText.compact(params))
                }
                Output.flush()
            }
            throw Session.fail(.connectionClosed(method: nil))
        } catch let error as FleetRPCClientError {
            throw Session.fail(error)
        }
    }
}
