import FleetRPC
public import JSONRPC

/// One line per event for `watch`: `12:00:03  temperature  nano-07 (AA:BB:CC:DD:EE:FF)  21 °C`.
public enum EventText {
    /// The line of an event (`params` of an `events.event` notification), or `nil` when it
    /// is not an event object. `names` maps addresses to the names to show.
    public static func line(_ params: JSONValue, names: [String: String] = [:]) -> String? {
        guard let topic = params["topic"]?.stringValue else { return nil }
        let data = params["data"] ?? .null
        let address = params["address"]?.stringValue
        var parts: [String] = []
        if let time = params["time"]?.stringValue.flatMap(Timestamp.parse) {
            parts.append(Timestamp.clock(time))
        } else {
            parts.append(params["time"]?.stringValue ?? "--:--:--")
        }
        parts.append(topic.padding(11))
        if let address {
            let name = data["alias"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } ?? data["name"]?.stringValue ?? names[address]
            parts.append(name.map { "\($0) (\(address))" } ?? address)
        }
        let detail = detail(topic: topic, data: data)
        if !detail.isEmpty { parts.append(detail) }
        return parts.joined(separator: "  ")
    }

    /// The topic-specific part of an event line.
    public static func detail(topic: String, data: JSONValue) -> String {
        switch topic {
        case EventTopic.temperature.rawValue:
            if let celsius = data["celsius"]?.int64Value { return Units.celsius(Int(celsius)) }
        case EventTopic.sensor.rawValue:
            if let sensor = data["sensor"]?.stringValue, let value = data["value"]?.doubleValue {
                return "\(sensor) \(Units.reading(value, unit: data["unit"]?.stringValue))"
            }
        case EventTopic.led.rawValue:
            if let on = data["on"]?.boolValue { return on ? "LED on" : "LED off" }
        case EventTopic.boards.rawValue:
            var parts: [String] = []
            switch data["event"]?.stringValue {
            case "added": parts.append("added")
            case "removed": parts.append("forgotten")
            case "alias": parts.append(data["alias"]?.stringValue.map { "alias \($0)" } ?? "alias removed")
            default: break
            }
            if let state = data["state"]?.stringValue { parts.append(state) }
            if let rssi = data["rssi"]?.int64Value { parts.append("\(rssi) dBm") }
            if !parts.isEmpty { return parts.joined(separator: ", ") }
        case EventTopic.adapter.rawValue:
            var parts: [String] = []
            if let powered = data["powered"]?.boolValue { parts.append(powered ? "adapter powered" : "adapter off") }
            if let bluez = data["bluez"]?.boolValue { parts.append(bluez ? "BlueZ up" : "BlueZ down") }
            if !parts.isEmpty { return parts.joined(separator: ", ") }
        default:
            break
        }
        if case .object(let members) = data, members.isEmpty { return "" }
        return data == .null ? "" : data.description
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
