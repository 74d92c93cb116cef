@testable import BlefleetDaemon
import FleetCore
import Foundation
import Testing

@Suite struct ProfileFilesTests {
    static let humidity = """
        # A lab's Nano sketch with the HTS221's humidity.
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

    /// Writes `files` into a fresh directory and loads it.
    func load(_ files: [String: String]) throws -> ProfileCatalog {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("profiles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, text) in files {
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return try ProfileFiles.load(directory: directory.path)
    }

    /// The sentence a bad file is refused with, without the directory.
    func refusal(_ text: String, file: String = "lab.yaml") throws -> String {
        do {
            _ = try load([file: text])
        } catch let error as ConfigurationError {
            return error.description.components(separatedBy: "/").last ?? ""
        }
        Issue.record("no refusal for:\n\(text)")
        return ""
    }

    @Test func aFileThatExtendsTheBuiltInProfileAddsItsSensor() throws {
        let catalog = try load(["nano-humidity.yaml": Self.humidity, "notes.txt": "not a profile"])
        #expect(catalog.profiles.map(\.name) == ["nano-humidity"])
        let profile = try #require(catalog.profile(named: "nano-humidity"))
        #expect(profile.advertisedService == BoardProfile.nano.advertisedService)
        #expect(profile.sensors.map(\.name) == ["temperature", "humidity"])
        #expect(profile.switches.map(\.name) == ["led"])
        let humidity = try #require(profile.sensor(named: "humidity"))
        #expect(humidity.format == .uint16)
        #expect(humidity.unit == "%")
        #expect(humidity.deviceClass == "humidity")
        #expect(humidity.access == [.read, .notify])
        #expect(abs((humidity.decode([0xB9, 0x0F]) ?? 0) - 40.25) < 1e-9)
        #expect(catalog.sensorNames == ["humidity", "temperature"])
    }

    @Test func noDirectoryIsTheBuiltInProfileAlone() throws {
        #expect(try ProfileFiles.load(directory: "/nonexistent/profiles") == .builtIn)
    }

    @Test func aBoardOfItsOwnServiceIsAProfileBesideTheBuiltInOne() throws {
        let catalog = try load([
            "env.yaml": """
                name: env-node
                advertised-service: 181a
                sensors:
                  pressure:
                    service: 181a
                    characteristic: 2a6d
                    format: int32
                    scale: 0.1
                    unit: Pa
                    access: [read]
                switches:
                  fan:
                    service: 181a
                    characteristic: 2aff
                    format: uint8
                """
        ])
        #expect(catalog.profiles.map(\.name) == ["env-node", "nano"])
        #expect(catalog.switchNames == ["fan", "led"])
        #expect(catalog.profile(named: "env-node")?.switch(named: "fan")?.access == [.write])
    }

    @Test func badFilesAreRefusedWithASentenceNamingTheLine() throws {
        #expect(
            try refusal(Self.humidity.replacingOccurrences(of: "uint16", with: "uint24"))
                == "lab.yaml, line 8: humidity: format: got \"uint24\"; one of sint8, uint8, int16, uint16, int32, float32 (little-endian)")
        #expect(
            try refusal(Self.humidity.replacingOccurrences(of: "scale: 0.01", with: "scale: none"))
                == "lab.yaml, line 9: humidity: scale: got \"none\"; a number other than 0, like 0.01")
        #expect(
            try refusal(Self.humidity.replacingOccurrences(of: "unit:", with: "units:"))
                == "lab.yaml, line 10: units: unknown key of a sensor; known keys are service, characteristic, format, scale, unit, access, device-class")
        #expect(
            try refusal(Self.humidity.replacingOccurrences(of: "extends: nano", with: "extends: nanoo"))
                == "lab.yaml, line 3: extends: got \"nanoo\"; a profile that extends none: nano")
        #expect(
            try refusal(Self.humidity.replacingOccurrences(of: "d888a9c4-f3cc-11ed-a05b-0242ac120003", with: "humid"))
                == "lab.yaml, line 7: humidity: characteristic: got \"humid\", not a UUID")
        #expect(
            try refusal(Self.humidity.replacingOccurrences(of: "access: [read, notify]", with: "access: [write]"))
                == "lab.yaml, line 11: humidity: access: a sensor must allow read or notify")
        #expect(
            try refusal("name: Lab Sketch\nadvertised-service: 181a\n")
                == "lab.yaml, line 1: name: got \"Lab Sketch\"; a name is lower-case letters, digits, - and _, starting with a letter")
        #expect(
            try refusal(Self.humidity.replacingOccurrences(of: "  humidity:", with: "  state:"))
                == "lab.yaml, line 5: sensors: \"state\" is the name of another MQTT topic of a board; a sensor cannot be one of all, availability, led, result, state, status")
        #expect(try refusal("name: lab\n").hasPrefix("lab.yaml, line 1: needs advertised-service"))
        #expect(try refusal("sensors: [\n").hasPrefix("lab.yaml: is not valid YAML"))
    }

    @Test func twoProfilesOfOneServiceAreRefused() throws {
        do {
            _ = try load([
                "a.yaml": "name: a\nadvertised-service: 181a\n", "b.yaml": "name: b\nadvertised-service: 181A\n",
            ])
            Issue.record("two profiles of one service were accepted")
        } catch let error as ConfigurationError {
            #expect(error.description.hasSuffix("is also the advertised service of a (\(error.source.replacingOccurrences(of: "b.yaml", with: "a.yaml"))); one profile per advertised service"), "\(error)")
        }
    }
}
