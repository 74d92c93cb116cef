import FleetRPC
public import JSONRPC

/// One line per event for `watch`: `12:00:03  temperature  nano-07 (AA:BB:CC:DD:EE:FF)  21 °C`.
public enum EventText {
    /// The line of an event (`params` of an `events.event` notification), or `nil` when it
    /// is not an event object. `names` maps addresses to the names to show.
    public static func line(_ params: JSONValue, names: [String: String] = [:]) -> String? {
        guard let topic = params["topic"]?.stringValue else { return nil }
        let data = params["data"] ?? .null
        let event = EventTopic(rawValue: topic).flatMap { EventDetail(topic: $0, data: data) }
        let address = params["address"]?.stringValue
        var parts: [String] = []
        if let time = params["time"]?.stringValue.flatMap(Timestamp.parse) {
            parts.append(Timestamp.clock(time))
        } else {
            parts.append(params["time"]?.stringValue ?? "--:--:--")
        }
        parts.append(topic.padding(11))
        if let address {
            let name: String? =
                switch event {
                case .alias(let alias?) where !alias.isEmpty: alias
                case .added(let name?): name
                default: names[address]
                }
            parts.append(name.map { "\($0) (\(address))" } ?? address)
        }
        let said = event.map(detail) ?? unknown(data)
        if !said.isEmpty { parts.append(said) }
        return parts.joined(separator: "  ")
    }

    /// The topic-specific part of an event line (`data`, as JSON, when it is not a known
    /// event's).
    public static func detail(topic: String, data: JSONValue) -> String {
        EventTopic(rawValue: topic).flatMap { EventDetail(topic: $0, data: data) }.map(detail) ?? unknown(data)
    }

    static func detail(_ event: EventDetail) -> String {
        switch event {
        case .temperature(let celsius): Units.celsius(celsius)
        case .sensor(let name, let value, let unit): "\(name) \(Units.reading(value, unit: unit))"
        case .led(let on): on ? "LED on" : "LED off"
        case .state(_, let to): to.rawValue
        case .added: "added"
        case .removed: "forgotten"
        case .alias(let alias): alias.map { "alias \($0)" } ?? "alias removed"
        case .adapter(let powered): powered ? "adapter powered" : "adapter off"
        }
    }

    static func unknown(_ data: JSONValue) -> String {
        if case .object(let members) = data, members.isEmpty { return "" }
        return data == .null ? "" : data.description
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
