import FleetRPC
import JSONRPC
import Foundation
import Testing
import TestSupport

/// The MQTT bridge (`blefleet-mqtt`, a client of the daemon's socket; `blefleet-mqtt(7)`)
/// against a real Mosquitto broker on loopback, with `mosquitto_sub`/`mosquitto_pub` as the
/// independent referee, and `blectl --broker` across two gateways (two testbeds, two
/// daemons, two bridges).
@Suite("MQTT bridge", .serialized)
struct MQTTBridgeTests {
    static func configuration(_ broker: MosquittoBroker, gateway: String, commands: Bool) -> String {
        """
        socket-group: root
        mqtt:
          url: \(broker.url)
          gateway: \(gateway)
          commands: \(commands)
          # The test's broker takes anonymous clients on this machine: said on purpose.
          insecure-commands: \(commands)

        """
    }

    /// Waits until the testbed's boards satisfy `condition` (bounded).
    static func waitForBoards(
        _ testbed: Testbed, lane: Lane = .bluezoo, _ what: String, _ condition: ([Testbed.Board]) -> Bool
    ) async throws {
        var last: [Testbed.Board] = []
        try await eventually(what, within: lane.allowing(.seconds(15)), otherwise: "boards: \(last)") {
            last = try await testbed.state()
            return condition(last)
        }
    }

    static func object(_ line: String, topic: String) throws -> [String: Any] {
        let payload = try #require(line.split(separator: " ", maxSplits: 1).last.map(String.init), "\(line)")
        let value = try JSONSerialization.jsonObject(with: Data(payload.utf8))
        return try #require(value as? [String: Any], "\(topic): \(payload)")
    }

    @Test(arguments: Lane.enabled)
    func discoveryStatesCommandsAndAvailabilityAsAUserSeesThemWithMosquittoSub(lane: Lane) async throws {
        let broker = try await MosquittoBroker()
        try await RunningBridge.with(
            lane: lane, boards: 3, configuration: Self.configuration(broker, gateway: "room-1", commands: true)
        ) { testbed, daemon, bridge in
            try await BlefleetdEndToEndTests.waitForReadyBoards(3, socket: daemon.socket, lane: lane)
            let boards = try await testbed.state()
            let ids = boards.map { FleetTopics.boardID($0.address) }

            // The gateway is online, retained.
            #expect(try await broker.subscribe("blefleet/room-1/status") == ["blefleet/room-1/status online"])

            // Home Assistant discovery: a light and a sensor per board, retained, valid JSON.
            let configs = try await broker.subscribe("homeassistant/+/+/+/config", count: 6)
            for id in ids {
                let light = try Self.object(
                    try #require(configs.first { $0.hasPrefix("homeassistant/light/blefleet_\(id)/led/config ") }),
                    topic: "light \(id)")
                #expect(light["command_topic"] as? String == "blefleet/room-1/\(id)/led/set")
                #expect(light["state_topic"] as? String == "blefleet/room-1/\(id)/led")
                #expect(light["payload_on"] as? String == "ON" && light["payload_off"] as? String == "OFF")
                #expect(light["availability_topic"] as? String == "blefleet/room-1/\(id)/availability")
                #expect(light["unique_id"] as? String == "blefleet_\(id)_led")
                let device = try #require(light["device"] as? [String: Any])
                #expect(device["identifiers"] as? [String] == ["blefleet_\(id)"])
                #expect(device["model"] as? String == "Nano 33 BLE Sense")
                #expect((device["name"] as? String)?.hasPrefix("nano-") == true)

                let sensor = try Self.object(
                    try #require(configs.first { $0.hasPrefix("homeassistant/sensor/blefleet_\(id)/temperature/config ") }),
                    topic: "sensor \(id)")
                #expect(sensor["device_class"] as? String == "temperature")
                #expect(sensor["unit_of_measurement"] as? String == "°C")
                #expect(sensor["state_class"] as? String == "measurement")
                #expect((sensor["expire_after"] as? Int ?? 0) > 60)
                #expect(sensor["state_topic"] as? String == "blefleet/room-1/\(id)/temperature")
                #expect(sensor["unique_id"] as? String == "blefleet_\(id)_temperature")
                #expect((sensor["device"] as? [String: Any])?["identifiers"] as? [String] == ["blefleet_\(id)"])
            }
            let temperatures = try await broker.subscribe("blefleet/room-1/+/temperature", count: 3, timeout: lane == .real ? 40 : 10)
            #expect(Set(temperatures) == Set(ids.map { "blefleet/room-1/\($0)/temperature 21" }))

            // ON on one board's led/set switches that board, and only it.
            try await broker.publish("blefleet/room-1/\(ids[0])/led/set", "ON")
            try await Self.waitForBoards(testbed, lane: lane, "nano-01's LED is on") { $0[0].led == 1 }
            #expect(try await broker.subscribe("blefleet/room-1/\(ids[0])/led") == ["blefleet/room-1/\(ids[0])/led ON"])
            #expect(try await testbed.state()[1].led == nil)

            // Bad payloads are logged and ignored; the bridge goes on.
            try await broker.publish("blefleet/room-1/\(ids[1])/led/set", "maybe")
            try await broker.publish("blefleet/all/led/set", "{not json")
            try await broker.publish("blefleet/all/led/set", #"{"on": true, "request": "a/b"}"#)
            try await broker.publish("blefleet/room-1/\(ids[2])/led/set", "on")  // any case
            try await Self.waitForBoards(testbed, lane: lane, "nano-03's LED is on") { $0[2].led == 1 }
            #expect(try await testbed.state()[1].led == nil, "a bad payload switched a board")
            #expect(daemon.process.isRunning && bridge.process.isRunning)
            #expect(bridge.log.contains("ignored an LED command that is neither ON nor OFF"), "\(bridge.log)")
            #expect(bridge.log.contains("ignored a fleet-wide LED command"), "\(bridge.log)")

            // A board switched off shows offline.
            let availability = try await broker.startSubscriber(
                "blefleet/room-1/\(ids[1])/availability", count: 2, timeout: lane == .real ? 120 : 20)
            _ = try await availability.waitForLines(1)
            _ = try await testbed.run(["board", "drop", "nano-02"])
            let seen = try await availability.waitForLines(2, timeout: lane.allowing(.seconds(20)))
            #expect(seen == ["blefleet/room-1/\(ids[1])/availability online", "blefleet/room-1/\(ids[1])/availability offline"])

            // The daemon itself has no network: it says who serves its mqtt: section.
            #expect(daemon.log.contains("the mqtt: section is served by blefleet-mqtt"), "\(daemon.logTail(40))")
        }
    }

    @Test func twoGatewaysAnswerAFleetWideCommandAndBlectlShowsEveryBoard() async throws {
        let broker = try await MosquittoBroker()
        try await RunningBridge.with(
            boards: 2, configuration: Self.configuration(broker, gateway: "room-1", commands: true)
        ) { first, one, _ in
            try await RunningBridge.with(
                boards: 3, configuration: Self.configuration(broker, gateway: "room-2", commands: true)
            ) { second, two, bridgeTwo in
                try await BlefleetdEndToEndTests.waitForReadyBoards(2, socket: one.socket)
                try await BlefleetdEndToEndTests.waitForReadyBoards(3, socket: two.socket)
                _ = try await broker.subscribe("blefleet/+/status", count: 2)

                // Through the broker itself: both gateways answer once, with every board.
                let results = try await broker.startSubscriber("blefleet/+/result/r1", count: 2)
                try await broker.publish("blefleet/all/led/set", #"{"on": true, "request": "r1", "timeoutMs": 5000}"#)
                let lines = try await results.waitForLines(2, timeout: .seconds(15))
                for (gateway, count) in [("room-1", 2), ("room-2", 3)] {
                    let line = try #require(lines.first { $0.hasPrefix("blefleet/\(gateway)/result/r1 ") }, "\(lines)")
                    let payload = String(line.dropFirst("blefleet/\(gateway)/result/r1 ".count))
                    let result = try JSONDecoder().decode(FleetResult<Done>.self, from: Data(payload.utf8))
                    #expect(result.succeededCount == count && result.failedCount == 0, "\(gateway): \(payload)")
                }
                #expect(try await first.state().allSatisfy { $0.led == 1 })
                #expect(try await second.state().allSatisfy { $0.led == 1 })

                // blectl across gateways: one table, a GATEWAY column, one summary.
                let off = try await Blectl.run(["--broker", broker.url, "led", "off", "--all"])
                #expect(off.status == 0, "\(off)")
                #expect(off.stdout.split(separator: "\n").first?.hasPrefix("GATEWAY") == true, "\(off)")
                #expect(off.stdout.contains("5/5 boards off, 2 gateways"), "\(off)")
                #expect(try await first.state().allSatisfy { $0.led == 0 })
                #expect(try await second.state().allSatisfy { $0.led == 0 })

                let temp = try await Blectl.run(["--broker", broker.url, "temp"])
                #expect(temp.status == 0, "\(temp)")
                let rows = temp.stdout.split(separator: "\n").filter { $0.contains("nano-") }
                #expect(rows.filter { $0.hasPrefix("room-1 ") }.count == 2 && rows.filter { $0.hasPrefix("room-2 ") }.count == 3, "\(temp)")
                let json = try JSONValue(parsing: try await Blectl.run(["--broker", broker.url, "--json", "temp"]).stdout)
                #expect(json["boards"]?.arrayValue?.count == 5, "\(json)")
                // A new reading reaches the table once the board has notified it.
                let id = FleetTopics.boardID(try await first.state()[0].address)
                let states = try await broker.startSubscriber("blefleet/room-1/\(id)/state", count: 100, timeout: 60)
                _ = try await states.waitForLines(1)
                try await first.run(["board", "temp", "nano-01", "-7"])
                _ = try await states.waitForLine(timeout: .seconds(20)) { $0.contains(#""celsius":-7"#) }
                let cold = try await Blectl.run(["--broker", broker.url, "temp"])
                #expect(cold.stdout.split(separator: "\n").contains {
                    $0.hasPrefix("room-1 ") && $0.contains("nano-01") && $0.hasSuffix("-7 °C")
                }, "\(cold)")

                // A gateway whose daemon goes away says so (its bridge stays, and publishes
                // offline); it is named, not waited for silently.
                let status = try await broker.startSubscriber("blefleet/room-2/status", count: 2, timeout: 30)
                _ = try await status.waitForLines(1)
                two.terminate()
                #expect(try await status.waitForLines(2, timeout: .seconds(15)).last == "blefleet/room-2/status offline")
                #expect(bridgeTwo.process.isRunning)
                #expect(bridgeTwo.log.contains("cannot reach blefleetd"), "\(bridgeTwo.log)")
                let partial = try await Blectl.run(["--broker", broker.url, "temp"])
                #expect(partial.status == 1 && partial.stderr.contains("gateway room-2 is offline"), "\(partial)")
            }
        }
    }

    @Test func publishOnlyByDefaultAndEverythingAgainAfterABrokerRestart() async throws {
        let broker = try await MosquittoBroker()
        try await RunningBridge.with(
            boards: 2, configuration: "socket-group: root\nmqtt:\n  url: \(broker.url)\n  gateway: lab\n"
        ) { testbed, daemon, bridge in
            try await BlefleetdEndToEndTests.waitForReadyBoards(2, socket: daemon.socket)
            let id = FleetTopics.boardID(try await testbed.state()[0].address)
            _ = try await broker.subscribe("homeassistant/+/+/+/config", count: 4)

            // commands: false (the default): a command is not carried out. Home Assistant
            // coming online afterwards is (the bridge answers it with its discovery), so
            // the command had its chance first.
            let again = try await broker.startSubscriber("homeassistant/light/blefleet_\(id)/led/config", count: 2)
            _ = try await again.waitForLines(1)
            try await broker.publish("blefleet/lab/\(id)/led/set", "ON")
            try await broker.publish("blefleet/all/led/set", #"{"on": true, "request": "x"}"#)
            try await broker.publish("homeassistant/status", "online")
            _ = try await again.waitForLines(2)
            #expect(try await testbed.state().allSatisfy { $0.led == nil }, "a command was carried out with commands: false")
            #expect(!bridge.log.contains("MQTT command"))

            // The broker goes away: the fleet does not notice (commands are answered as
            // fast as ever), the bridge says so once; it comes back empty (no persistence):
            // status, discovery and states are published again.
            await broker.stop()
            try? await eventually("the bridge says it lost the broker") { bridge.log.contains("lost the MQTT broker") }
            let on = try await Blectl.run(["--socket", daemon.socket, "led", "on", "--all"])
            #expect(on.status == 0 && on.stdout.contains("2/2 boards on"), "\(on)")
            try await broker.start()
            #expect(try await broker.subscribe("blefleet/lab/status", timeout: 20) == ["blefleet/lab/status online"])
            let configs = try await broker.subscribe("homeassistant/+/+/+/config", count: 4, timeout: 20)
            #expect(configs.count == 4)
            #expect(try await broker.subscribe("blefleet/lab/+/availability", count: 2) .allSatisfy { $0.hasSuffix(" online") })
            // Logged once per state change, not once per attempt.
            let log = bridge.log
            #expect(log.components(separatedBy: "lost the MQTT broker").count == 2, "\(log)")
            #expect(!log.contains("cannot reach the MQTT broker") && !log.contains("MQTT connection failed"), "\(log)")
            #expect(log.components(separatedBy: "connected to the MQTT broker").count == 3, "\(log)")

            // A clean stop says offline.
            #expect(bridge.terminate() == 0)
            #expect(try await broker.subscribe("blefleet/lab/status") == ["blefleet/lab/status offline"])
        }
    }

    /// The ACL of blefleet-mqtt(7), on a real broker: the gateway publishes and takes
    /// commands under its own name, everyone reads, only the commanding user commands.
    @Test func theManPagesACLLetsOneUserCommandAndEveryoneRead() async throws {
        let page = try String(
            contentsOf: repositoryRoot.appendingPathComponent("man/blefleet-mqtt.7"), encoding: .utf8)
        let start = try #require(page.range(of: "# /etc/mosquitto/blefleet.acl\n"))
        let end = try #require(page.range(of: "\n.Ed", range: start.upperBound..<page.endIndex))
        let acl = String(page[start.upperBound..<end.lowerBound])
        let broker = try await MosquittoBroker(
            allowAnonymous: true, users: ["room-101": "gw-secret", "teacher": "t-secret"], acl: acl)
        let directory = try makeTemporaryDirectory(prefix: "blefleet-acl")
        defer { try? FileManager.default.removeItem(at: directory) }
        let gatewayPassword = directory.appendingPathComponent("gateway-password")
        try "gw-secret\n".write(to: gatewayPassword, atomically: true, encoding: .utf8)
        chmod(gatewayPassword.path, 0o600)
        let teacherPassword = directory.appendingPathComponent("teacher-password")
        try "t-secret\n".write(to: teacherPassword, atomically: true, encoding: .utf8)
        let configuration = """
            socket-group: root
            mqtt:
              url: \(broker.url)
              gateway: room-101
              username: room-101
              password-file: \(gatewayPassword.path)
              commands: true

            """
        try await RunningBridge.with(boards: 2, configuration: configuration) { testbed, daemon, _ in
            try await BlefleetdEndToEndTests.waitForReadyBoards(2, socket: daemon.socket)
            // Anyone reads (anonymous here): the gateway could publish its topics and discovery.
            #expect(try await broker.subscribe("blefleet/room-101/status") == ["blefleet/room-101/status online"])
            #expect(try await broker.subscribe("homeassistant/+/+/+/config", count: 4).count == 4)

            // An anonymous command is not delivered: the gateway never answers it.
            let anonymous = try await Blectl.run(["--broker", broker.url, "--timeout", "4", "led", "on", "--all"])
            #expect(anonymous.status == 1 && anonymous.stderr.contains("gateway room-101 did not answer"), "\(anonymous)")
            #expect(try await testbed.state().allSatisfy { $0.led == nil })

            // The teacher's is.
            let teacher = try await Blectl.run([
                "--broker", broker.url, "--broker-user", "teacher", "--broker-password-file", teacherPassword.path,
                "led", "on", "--all",
            ])
            #expect(teacher.status == 0 && teacher.stdout.contains("2/2 boards on, 1 gateway"), "\(teacher)")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
        }
    }

    /// SIGTERM stops the bridge promptly even when the broker has stopped answering (it
    /// waits a moment for its `offline` to be acknowledged, not forever).
    @Test func aHungBrokerDoesNotHoldUpAStop() async throws {
        let broker = try await MosquittoBroker()
        try await RunningBridge.with(
            boards: 1, configuration: Self.configuration(broker, gateway: "g", commands: false)
        ) { _, _, bridge in
            let online = try await broker.subscribe("blefleet/g/status")
            #expect(online == ["blefleet/g/status online"])
            broker.freeze()
            defer { broker.thaw() }
            let started = ContinuousClock.now
            bridge.process.signal(SIGTERM)
            let status = await bridge.process.exit(timeout: .seconds(15))
            #expect(status == 0, "\(bridge.log)")
            #expect(started.duration(to: .now) < .seconds(8), "the stop took \(started.duration(to: .now))")
        }
    }
}
