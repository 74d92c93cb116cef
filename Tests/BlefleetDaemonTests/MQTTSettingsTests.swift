import BlefleetDaemon
import FleetMQTTSettings
import Foundation
import Testing

/// The `mqtt:` section of blefleetd.conf(5).
@Suite struct MQTTSettingsTests {
    func parse(_ text: String) throws -> DaemonConfiguration {
        var config = DaemonConfiguration()
        try config.apply(text: text, source: "/etc/blefleet/blefleetd.conf")
        return config
    }

    @Test func readsTheSectionWithItsDefaults() throws {
        let config = try parse(
            "mqtt:\n  url: mqtts://broker.lan:8884\n  gateway: room-101\n  username: room-101\n"
                + "  password-file: /etc/blefleet/mqtt-password\n  commands: true\n")
        let mqtt = try #require(config.mqtt)
        #expect(mqtt.url == "mqtts://broker.lan:8884" && mqtt.gatewayName == "room-101" && mqtt.commands)
        #expect(mqtt.topicPrefix == "blefleet" && mqtt.discoveryPrefix == "homeassistant")
        #expect(try parse("mqtt: {url: \"mqtt://b\", discovery-prefix: \"\"}\n").mqtt?.discoveryPrefix == "")
        #expect(try parse("mqtt: \"\"\n").mqtt == nil)
        #expect(DaemonConfiguration().mqtt == nil)
        // The gateway defaults to the host name (up to its first dot).
        let host = try #require(try parse("mqtt: {url: \"mqtt://b\"}\n").mqtt).gatewayName
        #expect(!host.isEmpty && !host.contains("."))
    }

    @Test(arguments: [
        ("mqtt: {gateway: x}\n", "url is missing"),
        ("mqtt: {url: \"http://b\"}\n", "not mqtt:// or mqtts://"),
        ("mqtt: {url: \"mqtt://b\", gateway: all}\n", "gateway: got \"all\""),
        ("mqtt: {url: \"mqtt://b\", gateway: \"a/b\"}\n", "gateway: got \"a/b\""),
        ("mqtt: {url: \"mqtt://b\", colour: red}\n", "colour is not a key of mqtt"),
        ("mqtt: {url: \"mqtt://b\", password-file: /etc/p}\n", "password-file is given without username"),
        ("mqtt: {url: \"mqtt://b\", ca-file: /etc/ca.pem}\n", "ca-file is only used with an mqtts:// url"),
        ("mqtt: {url: \"mqtt://b\", topic-prefix: \"a/#\"}\n", "topic-prefix: got \"a/#\""),
        ("mqtt: {url: \"mqtt://b\", commands: maybe}\n", "got \"maybe\""),
        ("mqtt: {url: \"mqtts://b\", commands: true}\n", "for anyone who can publish on a broker it reaches anonymously"),
        ("mqtt: {url: \"mqtt://127.0.0.1\", commands: true}\n", "insecure-commands: true says it is wanted anyway"),
        ("mqtt: {url: \"mqtt://broker.lan\", username: u, password-file: /p, commands: true}\n", "in plain text (mqtt:// to another machine)"),
        ("mqtt: {url: \"mqtt://b\", insecure-commands: sure}\n", "insecure-commands: got \"sure\", not true or false"),
    ])
    func refusesWhatCannotWork(text: String, problem: String) {
        #expect {
            try parse(text)
        } throws: { error in
            let message = String(describing: error)
            return message.contains("line 1: mqtt: ") && message.contains(problem)
        }
    }

    @Test func thePasswordFileMustNotBeReadableByOthers() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blefleet-mqtt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("password")
        try "s3cret\n".write(to: file, atomically: true, encoding: .utf8)
        let config = try parse("mqtt: {url: \"mqtt://b\", username: room, password-file: \(file.path)}\n")
        let mqtt = try #require(config.mqtt)

        chmod(file.path, 0o644)
        #expect {
            try mqtt.readPassword()
        } throws: { error in
            "\(error)".contains("can be read by others (mode 644); run chmod 600 \(file.path)")
        }
        chmod(file.path, 0o600)
        #expect(try mqtt.readPassword() == "s3cret")
        try "".write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o600)
        #expect { try mqtt.readPassword() } throws: { "\($0)".contains("is empty") }
        try FileManager.default.removeItem(at: file)
        #expect { try mqtt.readPassword() } throws: { "\($0)".contains("No such file") }
    }

    @Test("Commands come from a known broker client, or because a key says so")
    func commandsFromAKnownClient() throws {
        let secure = try parse("mqtt: {url: \"mqtts://broker.lan\", username: gw, password-file: /p, commands: true}\n").mqtt
        #expect(secure?.commands == true)
        let local = try parse("mqtt: {url: \"mqtt://[::1]:1883\", username: gw, password-file: /p, commands: true}\n").mqtt
        #expect(local?.commands == true)
        let localhost = try parse("mqtt: {url: \"mqtt://localhost\", username: gw, password-file: /p, commands: true}\n").mqtt
        #expect(localhost?.commands == true)
        let wanted = try parse("mqtt: {url: \"mqtt://broker.lan\", commands: true, insecure-commands: true}\n").mqtt
        #expect(wanted?.commands == true && wanted?.insecureCommands == true)
        // Publishing alone needs nothing of the kind.
        #expect(try parse("mqtt: {url: \"mqtt://broker.lan\"}\n").mqtt?.commands == false)
    }
}
