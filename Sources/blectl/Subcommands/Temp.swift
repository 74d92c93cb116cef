import ArgumentParser
import BlectlCore
import FleetRPC
import JSONRPC
import FleetRPCClient

struct Temp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "temp",
        abstract: "Show the temperature of the selected boards (all when none is named).",
        discussion: "Without --fresh a reading the daemon holds is shown if it is at most 60 s old.")

    @OptionGroup var options: GlobalOptions
    @OptionGroup var boards: HeldReadings

    @Flag(help: "Keep showing readings as they arrive (redrawn on a terminal, one line each otherwise).")
    var watch = false

    func validate() throws {
        if options.broker != nil, !boards.selectors.isEmpty || boards.fresh || watch {
            throw ValidationError("With --broker, temp shows every board of every gateway as published: no selectors, --fresh or --watch.")
        }
    }

    func run() async throws {
        if let broker = options.broker {
            try await BrokerCommands.temp(options, broker: broker)
            return
        }
        let session = try Session(options)
        let selection = try boards.selection()
        let params = FleetMethods.TemperatureRead.Params(select: selection, maxAgeMs: boards.maxAgeMs)
        if watch {
            // Listen before the first read so no reading between the two is missed.
            let notifications = session.client.notifications()
            _ = try await session.call(FleetMethods.EventsSubscribe.self, EventsSubscribeParams(topics: [.temperature]))
            let result = try session.result(try await session.call(FleetMethods.TemperatureRead.self, params))
            var state = TemperatureWatch(initial: result.outcomes, now: Timestamp.now(), acceptsNewBoards: selection == .all)
            try await TemperatureWatcher(session: session).run(&state, notifications: notifications)
            return
        }
        let reply = try await session.call(FleetMethods.TemperatureRead.self, params)
        try FleetOutput.print(reply, session: session, verb: "read") {
            Tables.temperatures($0)
        }
    }
}

/// The boards a reading command shows (all when none is named), and whether to read them
/// now or show what the daemon holds: `temp` and `read`.
struct HeldReadings: ParsableArguments {
    /// The age of a held reading that is shown without reading the board again.
    static let maxAgeMs = 60_000

    @Argument(help: "The boards to read (default: all).", completion: BoardCompletion.kind)
    var selectors: [String] = []

    @Flag(help: "Read every board now instead of showing held readings.")
    var fresh = false

    func selection() throws -> Selection { try Selectors.selection(selectors, all: false) ?? .all }

    /// The `maxAgeMs` of the call.
    var maxAgeMs: Int { fresh ? 0 : Self.maxAgeMs }
}

/// Prints `temp --watch`: a table redrawn in place on a terminal, one line (or one JSON
/// object) per reading otherwise. Runs until the connection ends.
struct TemperatureWatcher {
    let session: Session

    enum Input: Sendable {
        case notification(FleetRPCNotification)
        case tick
        case ended(any Error)
    }

    func run(_ state: inout TemperatureWatch, notifications: AsyncThrowingStream<FleetRPCNotification, any Error>) async throws {
        let redraw = Output.isTerminal && !session.options.json
        let (inputs, continuation) = AsyncStream<Input>.makeStream()
        let reader = Task {
            do {
                for try await notification in notifications { continuation.yield(.notification(notification)) }
                continuation.yield(.ended(FleetRPCClientError.connectionClosed(method: nil)))
            } catch {
                continuation.yield(.ended(error))
            }
        }
        let ticker = Task {
            while redraw && !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                continuation.yield(.tick)
            }
        }
        defer {
            reader.cancel()
            ticker.cancel()
        }
        var drawnLines = 0
        func draw(_ state: TemperatureWatch) {
            var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A\u{1B}[J" : ""
            let lines = state.table(now: Timestamp.now()).render(legend: !session.options.noLegend)
            text += lines.joined(separator: "\n")
            Output.line(text)
            Output.flush()
            drawnLines = lines.count
        }
        if redraw {
            draw(state)
        } else {
            for row in state.rows { emit(row) }
            Output.flush()
        }
        for await input in inputs {
            switch input {
            case .tick:
                draw(state)
            case .notification(let notification):
                guard notification.method == EventNotification.method, let params = notification.params(as: JSONValue.self),
                    let row = state.apply(params, now: Timestamp.now())
                else { continue }
                if redraw {
                    draw(state)
                } else if session.options.json {
                    Output.line(JSONText.compact(params))
                    Output.flush()
                } else {
                    emit(row)
                    Output.flush()
                }
            case .ended(let error):
                throw Session.fail(error as? FleetRPCClientError ?? .connectionClosed(method: nil))
            }
        }
    }

    private func emit(_ row: TemperatureWatch.Row) {
        if session.options.json {
            if let event = TemperatureWatch.event(row) {
                Output.line(JSONText.compact(event))
            } else {
                Output.error("blectl: \(row.name) (\(row.address)): \(row.error ?? "no reading")")
            }
        } else {
            Output.line(TemperatureWatch.line(row))
        }
    }
}
