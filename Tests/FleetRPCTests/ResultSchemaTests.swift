import Foundation
import Testing

@testable import FleetRPC
import JSONRPC

/// The JSON Schemas `rpc.discover` publishes are read from the types (``RPCShape``), or
/// written beside a type whose coding is its own; this holds each to what the type writes,
/// both ways: every value the type writes (samples with every optional field
/// set, and none) is valid under the schema, and every property the schema declares is one
/// the type writes. A field added to a type and not to its schema, or the other way round,
/// fails here.
@Suite struct ResultSchemaTests {
    static let a = BoardAddress("AA:BB:CC:DD:EE:01")!

    static func outcome<Value>(_ result: Result<Value, FleetError>, pending: Bool? = nil) -> BoardOutcome<Value> {
        BoardOutcome(address: a, name: "nano-01", result: result, latency: .milliseconds(12), pending: pending)
    }

    static let failure = FleetError(.absent, "gone")

    static func result<Value>(_ value: Value) -> FleetResult<Value> {
        FleetResult(outcomes: [outcome(.success(value)), outcome(.failure(failure), pending: true)], unmatched: [.name("x")])
    }

    static let board = BoardInfo(
        address: a, name: "nano-01", alias: "lab-1", state: .ready, rssi: -60, led: true, desiredLed: false,
        temperature: TemperatureReading(value: Celsius(degrees: -4), age: .milliseconds(80)),
        lastSeen: "2024-05-01T12:00:00Z", adapter: "hci0", profile: "nano",
        sensors: ["humidity": SensorInfo(value: 45.5, unit: "%", ageMs: 10, deviceClass: "humidity", decimals: 1), "temperature": SensorInfo()])

    static let status = DaemonStatus(
        version: "1", uptimeSeconds: 1.5, bluez: true, adapter: "hci0", powered: true, discovering: true,
        adapters: [
            .init(name: "hci0", address: "00:1A:7D:DA:71:13", present: true, powered: true, discovering: true, slotsUsed: 1,
                  slotsLimit: 7, boards: [a.rawValue], health: .ok,
                  lastRecovery: .init(symptom: .commandsTimeOut, step: .powerCycle, started: "2026-11-25T05:00:00Z",
                                      recovered: "2026-11-25T05:00:09Z"))
        ],
        boards: .init(known: 1, connected: 1, ready: 1), clients: 1,
        history: .init(enabled: false, reason: "the disk is full", path: "/var/lib/blefleet/history.sqlite3", dropped: 3),
        limits: .init(maxFrameBytes: 1_048_576, maxCallsPerConnection: 64),
        access: .init(controlGroup: "blefleet", readOnlyGroup: "blefleet-ro"))

    static func json<Value: Encodable>(_ values: [Value]) throws -> [JSONValue] {
        try values.map { try JSONValue(parsing: JSONEncoder().encode($0)) }
    }

    /// Each method's result samples, as JSON.
    static func samples(of name: String) throws -> [JSONValue] {
        switch name {
        case "boards.list", "boards.scan":
            return try json([BoardsListResult(boards: [board, BoardInfo(address: a, name: "", state: .absent)])])
        case "boards.alias":
            return try json([board, BoardInfo(address: a, name: "", state: .absent)])
        case "temperature.read":
            return try json([result(TemperatureReading(value: Celsius(degrees: 3), age: .zero))])
        case "sensor.read":
            let humidity = SensorValue(sensor: "humidity", value: 45.67, unit: "%", decimals: 2, age: .zero)
            let count = SensorValue(sensor: "count", value: 3, unit: nil, age: .zero)
            return try json([result(humidity), result(count)])
        case "gatt.read":
            return try json([result(GattBytes([0x0a, 0xff]))])
        case "events.subscribe", "events.unsubscribe":
            return try json([EventsSubscriptionResult(topics: EventTopic.allCases)])
        case "daemon.status":
            var older = status
            older.adapter = nil
            older.history = nil
            return try json([status, older])
        case "history.read":
            let readings = HistorySeries(
                address: a, name: "nano-01", sensor: "temperature",
                points: [HistoryPoint(time: 1_795_507_200_000, value: 21), HistoryPoint(time: 1_795_507_201_500, value: 22)],
                decimals: 0)
            let buckets = HistorySeries(
                address: a, name: nil, sensor: "temperature",
                points: [HistoryPoint(time: 1_795_507_200_000, mean: 21.5, min: 21, max: 22, count: 2)],
                latest: HistoryPoint(time: 1_795_507_201_500, value: 22))
            let empty = HistorySeries(address: a, name: "nano-01", sensor: "temperature", points: [])
            return try json([
                HistoryResult(sensor: "temperature", since: 0, until: 1_795_507_260_000, resolution: .raw, series: [readings, empty]),
                HistoryResult(
                    sensor: "temperature", since: 0, until: 1_795_507_260_000, resolution: .fiveMinutes, series: [buckets],
                    unmatched: [.name("x")]),
            ])
        case "devices.watch", "devices.unwatch":
            return try json([DevicesWatchResult(watching: true)])
        case "devices.connected":
            return try json([
                DevicesConnectedResult(devices: [
                    .init(
                        address: "F0:0D:00:00:00:01", addressType: "random", name: "nano-01", adapter: "hci0",
                        serviceUuids: ["00001801-0000-1000-8000-00805f9b34fb"]),
                    .init(address: "F0:0D:00:00:00:02", addressType: nil, name: nil, adapter: "hci1", serviceUuids: []),
                ]),
                DevicesConnectedResult(devices: []),
            ])
        case "device.connect", "device.services":
            let services = [
                GattServiceInfo(
                    uuid: "0000180f-0000-1000-8000-00805f9b34fb", handle: 10, primary: true,
                    characteristics: [
                        GattCharacteristicInfo(
                            uuid: "00002a19-0000-1000-8000-00805f9b34fb", handle: 11, properties: ["read", "notify"],
                            descriptors: [GattDescriptorInfo(uuid: "00002902-0000-1000-8000-00805f9b34fb", handle: 13)])
                    ])
            ]
            return try json([
                DeviceServicesResult(address: a.rawValue, name: "thermo", adapter: "hci0", mtu: 247, services: services),
                DeviceServicesResult(address: a.rawValue, mtu: 23, services: []),
            ])
        case "device.disconnect":
            return try json([DeviceReleasedResult(address: a.rawValue)])
        case "device.read":
            return try json([DeviceValueResult(value: [0x0a, 0xff])])
        case "device.write":
            return try json([DeviceWrittenResult()])
        case "device.notify":
            return try json([DeviceNotifyingResult(notifying: true)])
        case "device.pair":
            return try json([DevicePairedResult(address: a.rawValue, adapter: "hci0", bonded: true, alreadyPaired: false)])
        case "device.unpair":
            return try json([DeviceUnpairedResult(address: a.rawValue, adapters: ["hci0", "hci1"]), DeviceUnpairedResult(address: a.rawValue, adapters: [])])
        default:
            // led.set, switch.set, boards.connect/disconnect/forget, gatt.write, gatt.notify.
            return try json([result(Done())])
        }
    }

    @Test(arguments: FleetMethods.descriptors.map(\.name))
    func theSchemaOfEachResultIsItsType(method name: String) throws {
        let descriptor = try #require(FleetMethods.descriptors.first { $0.name == name })
        let schema = descriptor.result.schema
        var declared = Set<String>()
        var written = Set<String>()
        let writesOutcomes = !["boards.list", "boards.scan", "boards.alias", "temperature.read", "sensor.read", "gatt.read",
                               "events.subscribe", "events.unsubscribe", "daemon.status", "history.read"].contains(name)
            && !name.hasPrefix("device")
        if writesOutcomes {
            #expect(schema == FleetMethods.LedSet.descriptor.result.schema, "\(name) writes plain outcomes")
        }
        for sample in try Self.samples(of: name) {
            let problems = SchemaCheck.problems(of: sample, against: schema, at: "result", declared: &declared, written: &written)
            #expect(problems.isEmpty, "\(name): \(problems)")
        }
        #expect(declared.subtracting(written).isEmpty, "\(name): the schema declares what the type never writes: \(declared.subtracting(written).sorted())")
    }
}

/// The part of JSON Schema the published schemas use, checked strictly: an object may have
/// only the properties its schema declares (unless `additionalProperties` gives them one).
enum SchemaCheck {
    static func problems(
        of value: JSONValue, against schema: JSONValue, at path: String, declared: inout Set<String>, written: inout Set<String>
    ) -> [String] {
        var found: [String] = []
        if let options = schema["oneOf"]?.arrayValue {
            let matching = options.filter { option in
                var declared = Set<String>(), written = Set<String>()
                return problems(of: value, against: option, at: path, declared: &declared, written: &written).isEmpty
            }
            if matching.count != 1 { found.append("\(path): matches \(matching.count) of oneOf") }
            return found
        }
        if let type = schema["type"] {
            let types = type.arrayValue?.compactMap(\.stringValue) ?? [type.stringValue ?? ""]
            guard types.contains(where: { matches(value, $0) }) else { return ["\(path): \(value.kindDescription) is not \(types)"] }
        }
        if let allowed = schema["enum"]?.arrayValue, !allowed.contains(value) { found.append("\(path): \(value) not in enum") }
        if let pattern = schema["pattern"]?.stringValue, let text = value.stringValue,
            text.range(of: pattern, options: .regularExpression) == nil
        {
            found.append("\(path): \"\(text)\" does not match \(pattern)")
        }
        if case .object(let members) = value {
            let properties = schema["properties"]?.objectValue ?? [:]
            for (name, _) in properties { declared.insert("\(path).\(name)") }
            for required in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where members[required] == nil {
                found.append("\(path): missing required \(required)")
            }
            for (name, member) in members {
                if let property = properties[name] {
                    written.insert("\(path).\(name)")
                    found += problems(of: member, against: property, at: "\(path).\(name)", declared: &declared, written: &written)
                } else if let additional = schema["additionalProperties"], additional.objectValue != nil {
                    found += problems(of: member, against: additional, at: "\(path).*", declared: &declared, written: &written)
                } else {
                    found.append("\(path): \(name) is not in the schema")
                }
            }
        }
        if case .array(let elements) = value, let items = schema["items"] {
            for element in elements {
                found += problems(of: element, against: items, at: "\(path)[]", declared: &declared, written: &written)
            }
        }
        return found
    }

    static func matches(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null): true
        case ("integer", .int): true
        case ("number", .int), ("number", .double): true
        default: false
        }
    }
}
