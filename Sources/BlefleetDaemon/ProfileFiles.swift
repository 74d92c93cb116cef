import FleetCore
import FleetRPC
import Foundation
import Yams

/// Board profiles from files (`blefleet-profile(5)`): every `*.yaml` (or `*.yml`) of a
/// directory, each one kind of board. A mistake is a ``ConfigurationError`` naming the
/// file, the line and what is allowed.
enum ProfileFiles {
    /// The profiles of `directory`, sorted by file name; none when it does not exist.
    static func load(directory: String) throws -> ProfileCatalog {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch CocoaError.fileReadNoSuchFile {
            return .builtIn
        } catch {
            guard FileManager.default.fileExists(atPath: directory) else { return .builtIn }
            throw ConfigurationError(source: directory, problem: "cannot be read (check its permissions)")
        }
        let files = names.filter { !$0.hasPrefix(".") && ($0.hasSuffix(".yaml") || $0.hasSuffix(".yml")) }.sorted()
            .map { directory + "/" + $0 }
        var parsed: [Parsed] = []
        for path in files {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(source: path, problem: "cannot be read (check its permissions)")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw ConfigurationError(source: path, problem: "is not UTF-8 text")
            }
            parsed.append(try parse(text, source: path))
        }
        return try resolve(parsed)
    }

    /// One file as written: its own characteristics, and the profile it extends, if any.
    struct Parsed {
        let name: String
        let nameLine: Int?
        let advertisedService: GattUUID?
        let extends: (name: String, line: Int?)?
        let characteristics: [BoardProfile.Characteristic]
        let source: String
    }

    /// The keys of a profile file, and of each switch or sensor.
    static let profileKeys = ["name", "advertised-service", "extends", "switches", "sensors"]
    static let characteristicKeys = ["service", "characteristic", "format", "scale", "unit", "access", "device-class"]

    static func parse(_ text: String, source: String) throws -> Parsed {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            let first = String(describing: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            throw ConfigurationError(source: source, problem: "is not valid YAML: \(first)")
        }
        guard let root, let mapping = root.mapping else {
            throw ConfigurationError(
                source: source, line: root?.mark?.line,
                problem: "must be a mapping with name, advertised-service (or extends), switches and sensors")
        }
        let keys = try keyed(mapping, allowed: profileKeys, source: source, what: "a profile")
        func word(_ key: String) throws -> (String, Int?)? {
            guard let (node, line) = keys[key] else { return nil }
            guard let scalar = node.scalar, !scalar.string.isEmpty else {
                throw ConfigurationError(source: source, line: line, key: key, problem: "expected a single word")
            }
            return (scalar.string, node.mark?.line ?? line)
        }
        guard let (name, nameLine) = try word("name") else {
            throw ConfigurationError(source: source, line: root.mark?.line, problem: "has no name (like `name: nano-humidity`)")
        }
        guard BoardProfile.isValidName(name) else {
            throw ConfigurationError(
                source: source, line: nameLine, key: "name",
                problem: "got \"\(name)\"; a name is lower-case letters, digits, - and _, starting with a letter")
        }
        var advertised: GattUUID?
        if let (value, line) = try word("advertised-service") {
            guard let uuid = GattUUID(value) else {
                throw ConfigurationError(source: source, line: line, key: "advertised-service", problem: "got \"\(value)\", not a UUID")
            }
            advertised = uuid
        }
        let extends = try word("extends").map { (name: $0.0, line: $0.1) }
        guard advertised != nil || extends != nil else {
            throw ConfigurationError(
                source: source, line: nameLine,
                problem: "needs advertised-service (the service UUID the boards advertise) or extends (a profile to start from)")
        }
        var characteristics: [BoardProfile.Characteristic] = []
        for (key, role) in [("switches", BoardProfile.Role.switch), ("sensors", .sensor)] {
            guard let (node, line) = keys[key] else { continue }
            if let scalar = node.scalar, ["", "~", "null"].contains(scalar.string) { continue }
            guard let items = node.mapping else {
                throw ConfigurationError(
                    source: source, line: line, key: key, problem: "expected a mapping of names to characteristics")
            }
            for (nameNode, body) in items {
                let itemLine = nameNode.mark?.line
                guard let itemName = nameNode.string, BoardProfile.isValidName(itemName) else {
                    throw ConfigurationError(
                        source: source, line: itemLine, key: key,
                        problem: "got \"\(nameNode.string ?? "?")\"; a name is lower-case letters, digits, - and _, starting with a letter")
                }
                if role == .sensor, FleetTopics.reservedLevels.contains(itemName) {
                    throw ConfigurationError(
                        source: source, line: itemLine, key: key,
                        problem: "\"\(itemName)\" is the name of another MQTT topic of a board; a sensor cannot be one of \(FleetTopics.reservedLevels.sorted().joined(separator: ", "))")
                }
                guard !characteristics.contains(where: { $0.name == itemName }) else {
                    throw ConfigurationError(source: source, line: itemLine, key: itemName, problem: "is declared twice")
                }
                characteristics.append(try characteristic(itemName, role: role, body, line: itemLine, source: source))
            }
        }
        return Parsed(
            name: name, nameLine: nameLine, advertisedService: advertised, extends: extends,
            characteristics: characteristics, source: source)
    }

    /// A mapping's values by key, each with its line; unknown and repeated keys refused.
    private static func keyed(_ mapping: Node.Mapping, allowed: [String], source: String, what: String) throws
        -> [String: (Node, Int?)]
    {
        var keys: [String: (Node, Int?)] = [:]
        for (keyNode, value) in mapping {
            let line = keyNode.mark?.line
            guard let key = keyNode.string, allowed.contains(key) else {
                throw ConfigurationError(
                    source: source, line: line, key: keyNode.string,
                    problem: "unknown key of \(what); known keys are \(allowed.joined(separator: ", "))")
            }
            guard keys.updateValue((value, line), forKey: key) == nil else {
                throw ConfigurationError(source: source, line: line, key: key, problem: "is set twice")
            }
        }
        return keys
    }

    private static func characteristic(
        _ name: String, role: BoardProfile.Role, _ node: Node, line: Int?, source: String
    ) throws -> BoardProfile.Characteristic {
        guard let mapping = node.mapping else {
            throw ConfigurationError(
                source: source, line: node.mark?.line ?? line, key: name,
                problem: "expected a mapping of \(characteristicKeys.joined(separator: ", "))")
        }
        let keys = try keyed(mapping, allowed: characteristicKeys, source: source, what: "a \(role.rawValue)")
        func fail(_ key: String, _ problem: String) -> ConfigurationError {
            ConfigurationError(source: source, line: keys[key]?.1 ?? line, key: "\(name): \(key)", problem: problem)
        }
        func text(_ key: String) throws -> String? {
            guard let (node, _) = keys[key] else { return nil }
            guard let scalar = node.scalar else { throw fail(key, "expected a single value") }
            return scalar.string
        }
        func uuid(_ key: String) throws -> GattUUID {
            guard let value = try text(key) else { throw fail(key, "is missing (a UUID like d888a9c2-f3cc-11ed-a05b-0242ac120003 or 181A)") }
            guard let uuid = GattUUID(value) else { throw fail(key, "got \"\(value)\", not a UUID") }
            return uuid
        }
        let service = try uuid("service")
        let characteristic = try uuid("characteristic")
        let formats = ValueFormat.allCases.map(\.rawValue).joined(separator: ", ")
        guard let formatText = try text("format") else { throw fail("format", "is missing; one of \(formats)") }
        guard let format = ValueFormat(rawValue: formatText) else {
            throw fail("format", "got \"\(formatText)\"; one of \(formats) (little-endian)")
        }
        var scale = 1.0
        if let value = try text("scale") {
            guard let number = Double(value), number.isFinite, number != 0 else {
                throw fail("scale", "got \"\(value)\"; a number other than 0, like 0.01")
            }
            scale = number
        }
        let unit = try text("unit")
        if let unit, unit.isEmpty || unit.count > 16 || unit.contains(where: \.isNewline) {
            throw fail("unit", "got \"\(unit)\"; a short symbol like °C or %")
        }
        var access: Set<BoardProfile.Access> = []
        if let (node, _) = keys["access"] {
            let items = node.sequence.map { Array($0) } ?? [node]
            for item in items {
                guard let word = item.scalar?.string, let value = BoardProfile.Access(rawValue: word) else {
                    throw fail("access", "got \"\(item.scalar?.string ?? "?")\"; a list of read, write and notify")
                }
                access.insert(value)
            }
        } else {
            access = role == .switch ? [.write] : [.read, .notify]
        }
        switch role {
        case .switch where !access.contains(.write):
            throw fail("access", "a switch must allow write")
        case .sensor where access.isDisjoint(with: [.read, .notify]):
            throw fail("access", "a sensor must allow read or notify")
        default: break
        }
        let deviceClass = try text("device-class")
        if let deviceClass, deviceClass.isEmpty || !deviceClass.allSatisfy({ $0.isASCII && ($0.isLowercase || $0 == "_") }) {
            throw fail("device-class", "got \"\(deviceClass)\"; a Home Assistant device class like humidity")
        }
        return BoardProfile.Characteristic(
            name: name, role: role, service: service, uuid: characteristic, format: format, scale: scale, unit: unit,
            access: access, deviceClass: deviceClass)
    }

    /// Resolves `extends` (of the built-in profile or of a file without `extends`) and
    /// refuses two profiles of one name, or of one advertised service.
    static func resolve(_ parsed: [Parsed]) throws -> ProfileCatalog {
        var byName: [String: Parsed] = [:]
        for file in parsed {
            if file.name == BoardProfile.nano.name {
                throw ConfigurationError(
                    source: file.source, line: file.nameLine, key: "name",
                    problem: "\"nano\" is the built-in profile's name; give yours its own (it may extend nano)")
            }
            if let other = byName[file.name] {
                throw ConfigurationError(
                    source: file.source, line: file.nameLine, key: "name", problem: "\"\(file.name)\" is also the name in \(other.source)")
            }
            byName[file.name] = file
        }
        var profiles: [BoardProfile] = []
        for file in parsed {
            var base: BoardProfile?
            if let (name, line) = file.extends {
                if name == BoardProfile.nano.name {
                    base = .nano
                } else if let other = byName[name], other.extends == nil, let service = other.advertisedService {
                    base = BoardProfile(
                        name: other.name, advertisedService: service, characteristics: other.characteristics,
                        source: other.source)
                } else {
                    let known = ([BoardProfile.nano.name] + byName.values.filter { $0.extends == nil }.map(\.name)).sorted()
                    throw ConfigurationError(
                        source: file.source, line: line, key: "extends",
                        problem: "got \"\(name)\"; a profile that extends none: \(known.joined(separator: ", "))")
                }
            }
            let own = Set(file.characteristics.map(\.name))
            let inherited = (base?.characteristics ?? []).filter { !own.contains($0.name) }
            guard let service = file.advertisedService ?? base?.advertisedService else { continue }
            profiles.append(
                BoardProfile(
                    name: file.name, advertisedService: service, characteristics: inherited + file.characteristics,
                    source: file.source))
        }
        if let (later, earlier) = ProfileCatalog.conflicts(profiles).first {
            throw ConfigurationError(
                source: later.source, key: "advertised-service",
                problem: "\(later.advertisedService) is also the advertised service of \(earlier.name) (\(earlier.source)); one profile per advertised service")
        }
        return ProfileCatalog(files: profiles)
    }
}
