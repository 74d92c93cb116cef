import FleetRPC

/// Home Assistant MQTT discovery configs of one board: a `light` (its LED) and a `sensor`
/// per sensor of its profile (the temperature, and those a profile file adds), one
/// `device` per board.
/// <https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery>
struct HomeAssistantDiscovery: Sendable {
    let discoveryPrefix: String
    let topics: FleetTopics
    let gateway: String
    /// Seconds after which Home Assistant shows the temperature as unavailable when no
    /// new value arrived (the bridge republishes at least every 60 s).
    let expireAfter: Int

    struct Device: Encodable, Sendable {
        var identifiers: [String]
        var name: String
        var model = "Nano 33 BLE Sense"
        var manufacturer = "Arduino"
        var connections: [[String]]
    }

    struct Light: Encodable, Sendable {
        var name = "LED"
        var unique_id: String
        var object_id: String
        var command_topic: String
        var state_topic: String
        var payload_on = "ON"
        var payload_off = "OFF"
        var availability_topic: String
        var payload_available = "online"
        var payload_not_available = "offline"
        var qos = 1
        var device: Device
    }

    struct Sensor: Encodable, Sendable {
        var name: String
        var unique_id: String
        var object_id: String
        var state_topic: String
        var device_class: String?
        var unit_of_measurement: String?
        /// The decimals the profile's scale gives the value (absent for a float).
        var suggested_display_precision: Int?
        var state_class = "measurement"
        var expire_after: Int
        var availability_topic: String
        var payload_available = "online"
        var payload_not_available = "offline"
        var device: Device
    }

    /// `blefleet_f00d00000001`: the node id and the device identifier of a board.
    static func nodeID(_ address: String) -> String { "blefleet_" + FleetTopics.boardID(address) }

    func lightTopic(_ address: String) -> String { "\(discoveryPrefix)/light/\(Self.nodeID(address))/led/config" }
    /// The config topic of a board's sensor (`…/sensor/blefleet_f00d00000001/humidity/config`).
    func sensorTopic(_ address: String, sensor: String = TemperatureReading.sensor) -> String {
        "\(discoveryPrefix)/sensor/\(Self.nodeID(address))/\(sensor)/config"
    }

    func device(_ address: String, name: String) -> Device {
        Device(identifiers: [Self.nodeID(address)], name: name, connections: [["bluetooth", address]])
    }

    func light(_ address: String, name: String) -> Light {
        let node = Self.nodeID(address)
        return Light(
            unique_id: node + "_led", object_id: node + "_led", command_topic: topics.ledSet(gateway, address),
            state_topic: topics.led(gateway, address), availability_topic: topics.availability(gateway, address),
            device: device(address, name: name))
    }

    /// A sensor of the board's profile, with the device class and unit the profile gives.
    func sensor(_ address: String, name: String, sensor: String, unit: String?, deviceClass: String?, decimals: Int? = nil) -> Sensor {
        let node = Self.nodeID(address)
        return Sensor(
            name: sensor.prefix(1).uppercased() + sensor.dropFirst(),
            unique_id: node + "_" + sensor, object_id: node + "_" + sensor,
            state_topic: topics.sensor(gateway, address, sensor), device_class: deviceClass,
            unit_of_measurement: unit, suggested_display_precision: decimals, expire_after: expireAfter,
            availability_topic: topics.availability(gateway, address), device: device(address, name: name))
    }
}
