import FleetRPC
import Foundation
import JSONRPC
import TestSupport
import Testing

/// A lab's own sketch: a profile file is all it takes for every layer to offer its sensor
/// (the real daemon, blectl, both lanes).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct BoardProfileEndToEndTests {
    /// The lab's Nano sketch with the HTS221's relative humidity (the testbed's `--humidity`).
    static let humidityProfile = """
        name: nano-humidity
        extends: nano
        sensors:
          humidity:
            service: d888a9c2-f3cc-11ed-a05b-0242ac120003
            characteristic: d888a9c4-f3cc-11ed-a05b-0242ac120003
            format: uint16
            scale: 0.01
            unit: "%"
            access: [read, notify]
            device-class: humidity
        """

    @Test(arguments: Lane.enabled)
    func aProfileFileAddedWhileRunningMakesHumidityReadable(lane: Lane) async throws {
        let profiles = try makeTemporaryDirectory(prefix: "profiles")
        defer { try? FileManager.default.removeItem(at: profiles) }
        try await RunningDaemon.with(
            lane: lane, boards: 3, testbedArguments: ["--humidity"],
            configuration: "socket-group: root\nprofile-dir: \(profiles.path)\n"
        ) { testbed, daemon in
            try await BlefleetdEndToEndTests.waitForReadyBoards(3, socket: daemon.socket, lane: lane)
            // Before the file: no profile knows humidity, and the call says so.
            let unknown = try await Blectl.run(["--socket", daemon.socket, "read", "humidity"])
            #expect(unknown.status != 0, "\(unknown)")
            #expect(unknown.stderr.contains("no board profile has a sensor \"humidity\"; known: temperature"), "\(unknown)")

            try Self.humidityProfile.write(
                to: profiles.appendingPathComponent("nano-humidity.yaml"), atomically: true, encoding: .utf8)
            daemon.process.signal(SIGHUP)

            // Each ready board takes the new profile at once (no reconnect needed).
            let state = try await testbed.state()
            var readings: JSONValue = .null
            try? await eventually("3/3 humidity readings", within: .seconds(lane == .real ? 40 : 10), every: .milliseconds(200)) {
                let json = try await Blectl.run(["--socket", daemon.socket, "--json", "read", "humidity", "--fresh"])
                guard json.status == 0, let value = try? JSONValue(parsing: json.stdout), value["totals"]?["ok"]?.int64Value == 3
                else { return false }
                readings = value
                return true
            }
            let results = readings["results"]?.arrayValue ?? []
            #expect(results.count == 3, "no 3/3 humidity reading within the deadline:\n\(daemon.log)")
            for entry in results {
                let board = try #require(state.first { $0.address == entry["address"]?.stringValue })
                let expected = try #require(board.humidity)
                #expect(abs((entry["value"]?.doubleValue ?? -1) - expected) < 0.001, "\(entry)")
                // Hundredths, as the scale says: the value is the decimal one, and says so.
                #expect(entry["value"]?.doubleValue == (expected * 100).rounded() / 100, "\(entry)")
                #expect(entry["decimals"]?.int64Value == 2, "\(entry)")
                #expect(entry["unit"]?.stringValue == "%")
                #expect(entry["sensor"]?.stringValue == "humidity")
            }

            let table = try await Blectl.run(["--socket", daemon.socket, "read", "humidity", "nano-01"])
            #expect(table.status == 0, "\(table)")
            #expect(table.stdout.contains("HUMIDITY"), "\(table)")
            #expect(table.stdout.contains("40.25 %"), "\(table)")

            // The history keeps the readings as the profile says: its CSV in hundredths
            // (nano-02's 41.20, not 41.2), its JSON with the decimals.
            let csv = try await Blectl.run(
                ["--socket", daemon.socket, "history", "nano-02", "--sensor", "humidity", "--since", "10m", "--csv"])
            #expect(csv.status == 0, "\(csv)")
            let csvLines = csv.stdout.split(separator: "\n")
            #expect(csvLines.count >= 2, "\(csv)")
            #expect(csvLines.dropFirst().allSatisfy { $0.contains(",nano-02,humidity,") && $0.hasSuffix(",41.20,41.20,41.20,1") }, "\(csv)")
            let history = try JSONValue(parsing: try await Blectl.run(
                ["--socket", daemon.socket, "--json", "history", "nano-02", "--sensor", "humidity", "--since", "10m"]).stdout)
            #expect(history["boards"]?.arrayValue?.first?["decimals"]?.int64Value == 2, "\(history)")

            // boards.list carries each board's profile and sensors.
            let boards = try JSONValue(parsing: try await Blectl.run(["--socket", daemon.socket, "--json", "boards"]).stdout)
            for board in boards["boards"]?.arrayValue ?? [] {
                #expect(board["profile"]?.stringValue == "nano-humidity", "\(board)")
                #expect(board["sensors"]?["humidity"]?["unit"]?.stringValue == "%", "\(board)")
                #expect(board["sensors"]?["humidity"]?["decimals"]?.int64Value == 2, "\(board)")
                #expect(board["sensors"]?["temperature"]?["decimals"]?.int64Value == 0, "\(board)")
                #expect(board["sensors"]?["temperature"]?["unit"]?.stringValue == "°C", "\(board)")
            }

            // The built-in names still work on the new profile: the temperature, the LED.
            let temperature = try JSONValue(
                parsing: try await Blectl.run(["--socket", daemon.socket, "--json", "read", "temperature", "--fresh"]).stdout)
            for entry in temperature["results"]?.arrayValue ?? [] {
                let board = try #require(state.first { $0.address == entry["address"]?.stringValue })
                #expect(entry["value"]?.doubleValue == Double(board.temperature), "\(entry)")
            }
            let on = try await Blectl.run(["--socket", daemon.socket, "switch", "led", "on", "--all"])
            #expect(on.status == 0, "\(on)")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
            let noFan = try await Blectl.run(["--socket", daemon.socket, "switch", "fan", "on", "--all"])
            #expect(noFan.stderr.contains("no board profile has a switch \"fan\"; known: led"), "\(noFan)")
        }
    }

    @Test func aBadProfileFileStopsTheDaemonWithTheLine() async throws {
        let profiles = try makeTemporaryDirectory(prefix: "profiles")
        defer { try? FileManager.default.removeItem(at: profiles) }
        try Self.humidityProfile.replacingOccurrences(of: "uint16", with: "uint24").write(
            to: profiles.appendingPathComponent("lab.yaml"), atomically: true, encoding: .utf8)
        try await Testbed.with(boards: 1) { testbed in
            let daemon = try RunningDaemon(
                busAddress: testbed.busAddress, configuration: "socket-group: root\nprofile-dir: \(profiles.path)\n")
            #expect(await daemon.process.exit(timeout: .seconds(15)) == 78)
            #expect(
                daemon.log.contains(
                    "lab.yaml, line 7: humidity: format: got \"uint24\"; one of sint8, uint8, int16, uint16, int32, float32 (little-endian)"),
                "\(daemon.log)")
        }
    }
}

extension BoardProfileEndToEndTests {
    /// The humidity of a profile file reaches the boards table, MQTT and Home Assistant's
    /// discovery, with the device class and unit the profile gives.
    @Test(arguments: Lane.enabled)
    func aProfileSensorShowsInTheBoardsTableOnMQTTAndInHomeAssistant(lane: Lane) async throws {
        let profiles = try makeTemporaryDirectory(prefix: "profiles")
        defer { try? FileManager.default.removeItem(at: profiles) }
        try Self.humidityProfile.write(
            to: profiles.appendingPathComponent("nano-humidity.yaml"), atomically: true, encoding: .utf8)
        let broker = try await MosquittoBroker()
        try await RunningDaemon.with(
            lane: lane, boards: 2, testbedArguments: ["--humidity"],
            configuration: MQTTBridgeTests.configuration(broker, gateway: "room-h", commands: false)
                + "profile-dir: \(profiles.path)\n"
        ) { testbed, daemon in
            // The bridge is blefleet-mqtt, a client of the daemon's socket: the profile's
            // sensors reach it through boards.list, with their unit and device class.
            let bridge = try RunningBridge(for: daemon)
            defer { bridge.terminate() }
            try await BlefleetdEndToEndTests.waitForReadyBoards(2, socket: daemon.socket, lane: lane)
            let ids = try await testbed.state().map { FleetTopics.boardID($0.address) }
            let configs = try await broker.subscribe("homeassistant/sensor/+/humidity/config", count: 2)
            for id in ids {
                let sensor = try MQTTBridgeTests.object(
                    try #require(configs.first { $0.hasPrefix("homeassistant/sensor/blefleet_\(id)/humidity/config ") }),
                    topic: "humidity \(id)")
                #expect(sensor["device_class"] as? String == "humidity")
                #expect(sensor["unit_of_measurement"] as? String == "%")
                // Hundredths, as the profile's scale gives them: Home Assistant shows two decimals.
                #expect(sensor["suggested_display_precision"] as? Int == 2, "\(sensor)")
                #expect(sensor["state_topic"] as? String == "blefleet/room-h/\(id)/humidity")
                #expect(sensor["unique_id"] as? String == "blefleet_\(id)_humidity")
            }
            let values = try await broker.subscribe("blefleet/room-h/+/humidity", count: 2, timeout: lane == .real ? 40 : 10)
            #expect(
                Set(values) == ["blefleet/room-h/\(ids[0])/humidity 40.25", "blefleet/room-h/\(ids[1])/humidity 41.20"], "\(values)")

            let table = try await Blectl.run(["--socket", daemon.socket, "boards"])
            #expect(table.status == 0, "\(table)")
            #expect(table.stdout.contains("HUMIDITY"), "\(table)")
            #expect(table.stdout.contains("41.20 %"), "\(table)")
        }
    }
}
