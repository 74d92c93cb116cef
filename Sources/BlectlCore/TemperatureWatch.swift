public import FleetRPC
public import JSONRPC

/// The state behind `blectl temp --watch`: the latest reading of each board, updated from
/// `temperature` events. A plain value; the command feeds it and prints it.
public struct TemperatureWatch: Sendable, Hashable {
    public struct Row: Sendable, Hashable {
        public var name: String
        public var address: String
        public var celsius: Int?
        /// When the reading was taken, seconds since the epoch.
        public var readAt: Double?
        /// Why there is no reading, in words.
        public var error: String?
    }

    public private(set) var rows: [Row]
    /// Whether events of boards not in the initial result are shown (the selection is all).
    public let acceptsNewBoards: Bool

    /// Starts from a `temperature.read` result received at `now`.
    public init(initial: [BoardOutcome<TemperatureReading>], now: Double, acceptsNewBoards: Bool) {
        self.acceptsNewBoards = acceptsNewBoards
        rows = initial.map { outcome in
            let (name, address) = (outcome.name ?? "", outcome.address.rawValue)
            guard let reading = outcome.value else {
                return Row(name: name, address: address, error: Tables.failure(outcome.error))
            }
            return Row(
                name: name, address: address, celsius: reading.value.degrees,
                readAt: now - Double(reading.age.wholeMilliseconds) / 1000, error: nil)
        }
    }

    /// Applies an event (`params` of an `events.event` notification) received at `now`;
    /// returns the updated row, or `nil` when the event is not a reading of a watched board.
    public mutating func apply(_ event: JSONValue, now: Double) -> Row? {
        guard event["topic"]?.stringValue == EventTopic.temperature.rawValue,
            let address = event["address"]?.stringValue,
            case .temperature(let value) = EventDetail(topic: .temperature, data: event["data"] ?? .null)
        else { return nil }
        let readAt = event["time"]?.stringValue.flatMap(Timestamp.parse).map { min($0, now) } ?? now
        if let index = rows.firstIndex(where: { $0.address.uppercased() == address.uppercased() }) {
            rows[index].celsius = value
            rows[index].readAt = readAt
            rows[index].error = nil
            return rows[index]
        }
        guard acceptsNewBoards else { return nil }
        let row = Row(name: "-", address: address, celsius: value, readAt: readAt)
        rows.append(row)
        return row
    }

    /// The table at `now`: NAME ADDRESS TEMP AGE.
    public func table(now: Double) -> TextTable {
        TextTable(
            columns: [.init("NAME"), .init("ADDRESS"), .init("TEMP", .right), .init("AGE")],
            rows: rows.map { row in
                guard let celsius = row.celsius, let readAt = row.readAt else {
                    return [row.name, row.address, "-", row.error ?? "no reading yet"]
                }
                return [row.name, row.address, Units.celsius(celsius), Units.age(milliseconds: Int((now - readAt) * 1000))]
            })
    }

    /// One line for a streamed reading: `12:00:03  nano-07  AA:BB:CC:DD:EE:FF  -5 °C`.
    public static func line(_ row: Row) -> String {
        let time = row.readAt.map(Timestamp.clock) ?? "--:--:--"
        let value = row.celsius.map(Units.celsius) ?? (row.error ?? "no reading")
        return "\(time)  \(row.name)  \(row.address)  \(value)"
    }

    /// A reading as an event object, the shape `--json` prints one per line.
    public static func event(_ row: Row) -> JSONValue? {
        guard let celsius = row.celsius, let readAt = row.readAt else { return nil }
        return [
            "topic": .string(EventTopic.temperature.rawValue), "address": .string(row.address),
            "time": .string(Timestamp.iso8601(readAt)), "data": EventDetail.temperature(celsius: celsius).data,
        ]
    }
}
