public import FleetRPC

/// The tables blectl prints, built from the daemon's results. Pure: the current time is a
/// parameter.
public enum Tables {
    /// `boards` and `scan`: NAME ADDRESS STATE ADAPTER RSSI LED TEMP SEEN, and a column
    /// before SEEN for each other sensor the boards' profiles have (HUMIDITY…). ADAPTER is
    /// the one the board is linked through, else the one that hears it best. SEEN is when it
    /// last advertised, or `connected` (a connected board stops advertising). LED is what the
    /// board has, with the wish beside it when they differ (``led(_:)``).
    public static func boards(_ boards: [BoardInfo], now: Double) -> TextTable {
        let sensors = Set(boards.flatMap { $0.sensors?.keys.map { $0 } ?? [] }).subtracting([TemperatureReading.sensor]).sorted()
        return TextTable(
            columns: [
                .init("NAME"), .init("ADDRESS"), .init("STATE"), .init("ADAPTER"), .init("RSSI", .right), .init("LED"),
                .init("TEMP", .right),
            ] + sensors.map { .init($0.uppercased(), .right) } + [.init("SEEN")],
            rows: boards.map { board in
                let fixed: [String] = [
                    displayName(name: board.name, alias: board.alias),
                    board.address.rawValue,
                    board.state.rawValue,
                    board.adapter ?? "-",
                    board.rssi.map(String.init) ?? "-",
                    led(board),
                    board.temperature.map { Units.celsius($0.value.degrees) } ?? "-",
                ]
                let readings: [String] = sensors.map { name in
                    guard let sensor = board.sensors?[name], let value = sensor.value else { return "-" }
                    return Units.reading(value, unit: sensor.unit, decimals: sensor.decimals)
                }
                let linked = board.state == .ready || board.state == .resolving
                return fixed + readings + [linked ? "connected" : seen(board.lastSeen, now: now)]
            })
    }

    /// The LED column: `on`/`off` when the board has what was asked for (or nothing was
    /// asked), `off → on` when it has something else, `on (pending)` when nothing was
    /// written since it (re)connected, `-` when neither is known.
    public static func led(_ board: BoardInfo) -> String {
        func word(_ on: Bool) -> String { on ? "on" : "off" }
        switch (board.led, board.desiredLed) {
        case (nil, nil): return "-"
        case (let has?, nil): return word(has)
        case (nil, let wanted?): return "\(word(wanted)) (pending)"
        case (let has?, let wanted?): return has == wanted ? word(has) : "\(word(has)) → \(word(wanted))"
        }
    }

    /// `led`, `connect`, `disconnect`, `forget`: NAME ADDRESS RESULT TIME, the result being
    /// `verb`, the error in words, or for a change kept for later (`pending`) the error and
    /// that it is applied when the board is back.
    public static func outcomes(_ results: [BoardOutcome<Done>], verb: String) -> TextTable {
        TextTable(
            columns: [.init("NAME"), .init("ADDRESS"), .init("TIME", .right), .init("RESULT")],
            rows: results.map { outcome in
                let result =
                    if outcome.succeeded { verb } else if outcome.pending == true {
                        "pending: \(outcome.error?.message ?? "not reachable now.") Switched \(verb) when it is back."
                    } else { failure(outcome.error) }
                return [outcome.name ?? "", outcome.address.rawValue, Units.latency(outcome.latency), result]
            })
    }

    /// `led --broker`: GATEWAY NAME ADDRESS TIME RESULT.
    public static func outcomes(byGateway results: [(gateway: String, outcome: BoardOutcome<Done>)], verb: String) -> TextTable {
        let plain = outcomes(results.map(\.outcome), verb: verb)
        return TextTable(
            columns: [.init("GATEWAY")] + plain.columns,
            rows: zip(results, plain.rows).map { [$0.gateway] + $1 })
    }

    /// `temp --broker`: GATEWAY NAME ADDRESS STATE TEMP, from the boards' retained state.
    public static func temperatures(byGateway boards: [(gateway: String, board: BoardInfo)]) -> TextTable {
        TextTable(
            columns: [.init("GATEWAY"), .init("NAME"), .init("ADDRESS"), .init("STATE"), .init("TEMP", .right)],
            rows: boards.map { gateway, board in
                [
                    gateway, displayName(name: board.name, alias: board.alias), board.address.rawValue, board.state.rawValue,
                    board.temperature.map { Units.celsius($0.value.degrees) } ?? "-",
                ]
            })
    }

    /// `temp`: NAME ADDRESS TEMP AGE, or the error in words in the AGE column.
    public static func temperatures(_ results: [BoardOutcome<TemperatureReading>]) -> TextTable {
        TextTable(
            columns: [.init("NAME"), .init("ADDRESS"), .init("TEMP", .right), .init("AGE")],
            rows: results.map { outcome in
                guard let reading = outcome.value else {
                    return [outcome.name ?? "", outcome.address.rawValue, "-", failure(outcome.error)]
                }
                return [
                    outcome.name ?? "", outcome.address.rawValue, Units.celsius(reading.value.degrees),
                    Units.age(milliseconds: reading.age.wholeMilliseconds),
                ]
            })
    }

    /// `read SENSOR`: NAME ADDRESS SENSOR AGE (the sensor's name as the value column's
    /// head), or the error in words in the AGE column.
    public static func readings(_ results: [BoardOutcome<SensorValue>], sensor: String) -> TextTable {
        TextTable(
            columns: [.init("NAME"), .init("ADDRESS"), .init(sensor.uppercased(), .right), .init("AGE")],
            rows: results.map { outcome in
                guard let reading = outcome.value else {
                    return [outcome.name ?? "", outcome.address.rawValue, "-", failure(outcome.error)]
                }
                return [
                    outcome.name ?? "", outcome.address.rawValue, Units.reading(reading.value, unit: reading.unit, decimals: reading.decimals),
                    Units.age(milliseconds: reading.age.wholeMilliseconds),
                ]
            })
    }

    /// `gatt read` and `gatt write`: NAME ADDRESS TIME VALUE/RESULT.
    public static func gatt(_ results: [BoardOutcome<GattBytes>]) -> TextTable {
        gatt(results, head: "VALUE") { HexBytes.encode($0.bytes) }
    }

    /// `gatt write`: NAME ADDRESS TIME RESULT.
    public static func gatt(_ results: [BoardOutcome<Done>], verb: String) -> TextTable {
        gatt(results, head: "RESULT") { _ in verb }
    }

    private static func gatt<Value>(_ results: [BoardOutcome<Value>], head: String, _ text: (Value) -> String) -> TextTable {
        TextTable(
            columns: [.init("NAME"), .init("ADDRESS"), .init("TIME", .right), .init(head)],
            rows: results.map { outcome in
                let result = outcome.value.map(text) ?? failure(outcome.error)
                return [outcome.name ?? "", outcome.address.rawValue, Units.latency(outcome.latency), result]
            })
    }

    /// `status`: one `key: value` line each, one `Adapter:` line per adapter.
    public static func status(_ status: DaemonStatus) -> [String] {
        var rows: [(String, String)] = [
            ("Version", status.version),
            ("Uptime", Units.span(seconds: status.uptimeSeconds)),
            ("BlueZ", status.bluez ? "reachable" : "not reachable"),
        ]
        if status.adapters.isEmpty {
            // A daemon that does not list its adapters (older), or has none.
            rows += [
                ("Adapter", status.adapter ?? "none"),
                ("Powered", status.powered ? "yes" : "no"),
                ("Scanning", status.discovering ? "yes" : "no"),
            ]
        } else {
            rows += status.adapters.map { ("Adapter", adapterLine($0)) }
        }
        rows += [
            ("Boards", "\(status.boards.known) known, \(status.boards.connected) connected, \(status.boards.ready) ready"),
            ("Clients", String(status.clients)),
        ]
        if let history = status.history {
            var line = history.enabled ? "kept in \(history.path)" : "off: \(history.reason ?? "no reason given")"
            if history.dropped > 0 { line += " (\(history.dropped) readings not kept)" }
            rows.append(("History", line))
        }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { key, value in key + ":" + String(repeating: " ", count: width - key.count + 1) + value }
    }

    /// `hci0 (00:1A:7D:DA:71:13): on, scanning, 3 of 5 slots used`, or why it is not used;
    /// a stuck controller says so, with why and the recovery step reached, and a recovered
    /// one when it recovered.
    public static func adapterLine(_ adapter: DaemonStatus.Adapter) -> String {
        guard adapter.present else { return "\(adapter.name): missing (BlueZ does not show it)" }
        let name = adapter.address.map { "\(adapter.name) (\($0))" } ?? adapter.name
        var facts = [adapter.powered ? "on" : "off"]
        if adapter.discovering { facts.append("scanning") }
        facts.append("\(adapter.slotsUsed) of \(adapter.slotsLimit) slots used")
        switch adapter.health {
        case .recovering?: facts.append("stuck, recovering (\(recoveryWords(adapter.lastRecovery)))")
        case .failed?: facts.append("stuck, did not recover (\(recoveryWords(adapter.lastRecovery))); its boards use the others")
        case .ok?, nil:
            if let recovery = adapter.lastRecovery, let recovered = recovery.recovered {
                let time = Timestamp.parse(recovered).map(Timestamp.clock) ?? recovered
                facts.append("recovered at \(time) (\(recoveryWords(recovery)))")
            }
        }
        return "\(name): \(facts.joined(separator: ", "))"
    }

    /// `commands time out; power-cycle` — why an adapter is stuck and the step reached.
    static func recoveryWords(_ recovery: DaemonStatus.Recovery?) -> String {
        guard let recovery else { return "no step yet" }
        return "\(String(recovery.symptom.rawValue.map { $0 == "-" ? " " : $0 })); \(recovery.step.rawValue)"
    }

    /// The alias when there is one, else the advertised name.
    public static func displayName(name: String, alias: String?) -> String {
        if let alias, !alias.isEmpty { return alias }
        return name.isEmpty ? "-" : name
    }

    /// A board's error in words: `failed: <message>`.
    public static func failure(_ error: FleetError?) -> String {
        guard let error else { return "failed" }
        return "failed: \(error.message)"
    }

    static func seen(_ lastSeen: String?, now: Double) -> String {
        guard let lastSeen, let time = Timestamp.parse(lastSeen) else { return "-" }
        return Units.age(milliseconds: Int((now - time) * 1000))
    }
}
