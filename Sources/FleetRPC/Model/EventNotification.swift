/// The params of a server→client notification sent to a subscribed connection, under the
/// method name ``method``.
public import JSONRPC

public struct EventNotification: FleetNotification, Hashable {
    /// The JSON-RPC method name of event notifications.
    public static let method = "events.event"
    /// The notification a subscriber gets when it fell behind and `count` events were lost.
    public static let droppedMethod = "events.dropped"

    public var topic: EventTopic
    /// The board concerned, if any.
    public var address: String?
    /// When it happened, ISO 8601 UTC.
    public var time: String
    /// What happened, by topic (``detail`` reads it).
    public var data: JSONValue

    public init(topic: EventTopic, address: String? = nil, time: String, data: JSONValue) {
        (self.topic, self.address, self.time, self.data) = (topic, address, time, data)
    }

    /// The event `detail` of the board at `address` (none for an adapter's).
    public init(_ detail: EventDetail, address: String? = nil, time: String) {
        self.init(topic: detail.topic, address: address, time: time, data: detail.data)
    }

    /// What happened; nil for data this client does not know (a newer daemon's).
    public var detail: EventDetail? { EventDetail(topic: topic, data: data) }
}

/// What an event says, by topic: the one description of an event's `data`, which the daemon
/// writes and every client (blectl, blefleet-web, blefleet-mqtt) reads.
public enum EventDetail: Sendable, Hashable {
    /// `boards`: `{"event": "state", "from": …, "state": …}`.
    case state(from: BoardPhase, to: BoardPhase)
    /// `boards`: `{"event": "added", "name": …}` (null: it advertises none).
    case added(name: String?)
    /// `boards`: `{"event": "removed"}`: forgotten.
    case removed
    /// `boards`: `{"event": "alias", "alias": …}` (null: removed).
    case alias(String?)
    /// `temperature`: `{"celsius": 21}`, whole degrees, signed.
    case temperature(celsius: Int)
    /// `sensor`: `{"sensor": …, "value": …, "unit": …}`, the unit left out when the
    /// profile gives none.
    case sensor(name: String, value: Double, unit: String?)
    /// `led`: `{"on": true}`.
    case led(on: Bool)
    /// `adapter`: `{"powered": false}`.
    case adapter(powered: Bool)

    public var topic: EventTopic {
        switch self {
        case .state, .added, .removed, .alias: .boards
        case .temperature: .temperature
        case .sensor: .sensor
        case .led: .led
        case .adapter: .adapter
        }
    }

    /// As the wire's `data`.
    public var data: JSONValue {
        let text = { (value: String?) in value.map(JSONValue.string) ?? .null }
        switch self {
        case .state(let from, let to): return ["event": "state", "from": .string(from.rawValue), "state": .string(to.rawValue)]
        case .added(let name): return ["event": "added", "name": text(name)]
        case .removed: return ["event": "removed"]
        case .alias(let alias): return ["event": "alias", "alias": text(alias)]
        case .temperature(let celsius): return ["celsius": .int(Int64(celsius))]
        case .sensor(let name, let value, let unit):
            var data: [String: JSONValue] = ["sensor": .string(name), "value": .double(value)]
            if let unit { data["unit"] = .string(unit) }
            return .object(data)
        case .led(let on): return ["on": .bool(on)]
        case .adapter(let powered): return ["powered": .bool(powered)]
        }
    }

    /// The `data` of a `topic` event read; nil when it is not of a shape above.
    public init?(topic: EventTopic, data: JSONValue) {
        switch (topic, data["event"]?.stringValue) {
        case (.boards, "state"):
            guard let from = data["from"]?.stringValue.flatMap(BoardPhase.init), let to = data["state"]?.stringValue.flatMap(BoardPhase.init)
            else { return nil }
            self = .state(from: from, to: to)
        case (.boards, "added"): self = .added(name: data["name"]?.stringValue)
        case (.boards, "removed"): self = .removed
        case (.boards, "alias"): self = .alias(data["alias"]?.stringValue)
        case (.temperature, _):
            guard let celsius = data["celsius"]?.int64Value.flatMap({ Int(exactly: $0) }) else { return nil }
            self = .temperature(celsius: celsius)
        case (.sensor, _):
            guard let name = data["sensor"]?.stringValue, let value = data["value"]?.doubleValue else { return nil }
            self = .sensor(name: name, value: value, unit: data["unit"]?.stringValue)
        case (.led, _):
            guard let on = data["on"]?.boolValue else { return nil }
            self = .led(on: on)
        case (.adapter, _):
            guard let powered = data["powered"]?.boolValue else { return nil }
            self = .adapter(powered: powered)
        default:
            return nil
        }
    }
}
