import Foundation
import Glibc
public import Yams

/// The `mqtt:` section of `blefleetd.conf(5)`: the bridge to an MQTT broker (`blefleet-mqtt`),
/// off when absent. Read by `blefleet-mqtt`, and checked by `blefleetd` with the rest of the
/// file (the daemon itself has no network).
public struct MQTTSettings: Sendable, Equatable {
    /// `mqtt://host[:port]` or `mqtts://host[:port]` (`url`, required).
    public var url: String
    /// This gateway's name in topics (`gateway`); nil: the host name.
    public var gateway: String?
    public var username: String?
    /// Where the password is (`password-file`): never in the main file. Read when the
    /// daemon starts (``readPassword()``).
    public var passwordFile: String?
    public var caFile: String?
    public var topicPrefix: String = "blefleet"
    /// Empty turns Home Assistant discovery off.
    public var discoveryPrefix: String = "homeassistant"
    /// Carry out commands from the broker (`commands`); publish only by default.
    public var commands: Bool = false
    /// Carry out commands even from a broker reached anonymously or in plain text across the
    /// network (`insecure-commands`): said on purpose, never by default.
    public var insecureCommands: Bool = false

    public init(url: String) {
        self.url = url
    }

    /// The sub-keys, each with what it allows.
    public static let keys: [(key: String, allowed: String)] = [
        ("url", "mqtt://host[:port] or mqtts://host[:port]"),
        ("gateway", "a name without /, + or # (default: the host name)"),
        ("username", "a user name"),
        ("password-file", "an absolute path to a file only its owner (and group) can read"),
        ("ca-file", "an absolute path to a PEM file"),
        ("topic-prefix", "topic levels like blefleet or site/blefleet, no + or #"),
        ("discovery-prefix", "a topic prefix like homeassistant, or empty for no discovery"),
        ("commands", "true or false"),
        ("insecure-commands", "true or false"),
    ]

    /// The gateway name: ``gateway``, else the host name up to its first dot.
    public var gatewayName: String {
        if let gateway { return gateway }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "gateway" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let host = name.split(separator: ".").first.map(String.init) ?? ""
        return host.isEmpty ? "gateway" : host
    }

    /// The password from ``passwordFile`` (nil without one); throws a sentence when the
    /// file cannot be read, others can read it, or it is empty.
    public func readPassword() throws -> String? {
        guard let passwordFile else { return nil }
        do {
            return try Self.readPassword(passwordFile)
        } catch let problem as MQTTSettingsProblem {
            throw MQTTPasswordError(description: problem.text)
        }
    }

    static func readPassword(_ path: String) throws -> String {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw MQTTSettingsProblem(text: "password-file: cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw MQTTSettingsProblem(text: "password-file: \(path) is not a regular file")
        }
        guard info.st_mode & 0o007 == 0 else {
            throw MQTTSettingsProblem(
                text: "password-file: \(path) can be read by others (mode \(String(info.st_mode & 0o777, radix: 8))); "
                    + "run chmod 600 \(path)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MQTTSettingsProblem(text: "password-file: cannot read \(path) (check its permissions)")
        }
        let password = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .first.map(String.init) ?? ""
        guard !password.isEmpty else { throw MQTTSettingsProblem(text: "password-file: \(path) is empty") }
        return password
    }
}

extension MQTTSettings {
    /// The `mqtt:` mapping of a configuration file; throws a sentence naming the key that
    /// is wrong.
    public static func parse(_ node: Node) throws(MQTTSettingsProblem) -> MQTTSettings {
        do {
            return try parseMapping(node)
        } catch let problem as MQTTSettingsProblem {
            throw problem
        } catch {
            throw MQTTSettingsProblem(text: "\(error)")
        }
    }

    /// The `mqtt:` section of the configuration file at `path` (`blefleetd.conf(5)`); nil
    /// when the file has none (or it is empty). The file's other keys are the daemon's.
    public static func load(fromConfigurationFile path: String) throws(MQTTSettingsProblem) -> MQTTSettings? {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MQTTSettingsProblem(
                text: "cannot read \(path): \(String(cString: strerror(access(path, R_OK) == 0 ? EIO : errno)))")
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: String(decoding: data, as: UTF8.self))
        } catch {
            throw MQTTSettingsProblem(text: "\(path) is not valid YAML: \(error)")
        }
        guard let root else { return nil }
        guard let mapping = root.mapping else { throw MQTTSettingsProblem(text: "\(path): expected a mapping of keys") }
        guard let node = mapping.first(where: { $0.key.string == "mqtt" })?.value else { return nil }
        if let scalar = node.scalar, ["", "~", "null"].contains(scalar.string) { return nil }
        do {
            return try parse(node)
        } catch {
            throw MQTTSettingsProblem(text: "\(path): mqtt: \(error.text)")
        }
    }

    private static func parseMapping(_ node: Node) throws -> MQTTSettings {
        guard let mapping = node.mapping else { throw MQTTSettingsProblem(text: "expected a mapping with at least url") }
        var values: [String: Node] = [:]
        for (keyNode, valueNode) in mapping {
            guard let key = keyNode.string else { throw MQTTSettingsProblem(text: "keys must be plain words") }
            guard MQTTSettings.keys.contains(where: { $0.key == key }) else {
                throw MQTTSettingsProblem(text: "\(key) is not a key of mqtt")
            }
            guard values.updateValue(valueNode, forKey: key) == nil else { throw MQTTSettingsProblem(text: "\(key) is set twice") }
        }
        func text(_ key: String) throws -> String? {
            guard let node = values[key] else { return nil }
            guard let scalar = node.scalar else { throw MQTTSettingsProblem(text: "\(key): expected a single value") }
            return scalar.string
        }
        guard let url = try text("url"), !url.isEmpty else { throw MQTTSettingsProblem(text: "url is missing") }
        guard url.hasPrefix("mqtt://") || url.hasPrefix("mqtts://") else {
            throw MQTTSettingsProblem(text: "url: got \"\(url)\", which is not mqtt:// or mqtts://")
        }
        var settings = MQTTSettings(url: url)
        if let gateway = try text("gateway") {
            guard !gateway.isEmpty, gateway != "all", gateway.utf8.count <= 128,
                !gateway.contains(where: { "/+#".contains($0) })
            else {
                throw MQTTSettingsProblem(text: "gateway: got \"\(gateway)\"; a name without /, + or #, not \"all\"")
            }
            settings.gateway = gateway
        }
        settings.username = try text("username").flatMap { $0.isEmpty ? nil : $0 }
        if let path = try text("password-file") {
            guard path.hasPrefix("/") else { throw MQTTSettingsProblem(text: "password-file: got \"\(path)\", not an absolute path") }
            settings.passwordFile = path
            guard settings.username != nil else { throw MQTTSettingsProblem(text: "password-file is given without username") }
        }
        if let path = try text("ca-file") {
            guard path.hasPrefix("/") else { throw MQTTSettingsProblem(text: "ca-file: got \"\(path)\", not an absolute path") }
            guard url.hasPrefix("mqtts://") else { throw MQTTSettingsProblem(text: "ca-file is only used with an mqtts:// url") }
            settings.caFile = path
        }
        if let prefix = try text("topic-prefix") {
            guard !prefix.isEmpty, !prefix.hasPrefix("/"), !prefix.hasSuffix("/"), !prefix.contains(where: { "+#".contains($0) })
            else { throw MQTTSettingsProblem(text: "topic-prefix: got \"\(prefix)\"") }
            settings.topicPrefix = prefix
        }
        if let prefix = try text("discovery-prefix") {
            guard !prefix.hasPrefix("/"), !prefix.hasSuffix("/"), !prefix.contains(where: { "+#".contains($0) }) else {
                throw MQTTSettingsProblem(text: "discovery-prefix: got \"\(prefix)\"")
            }
            settings.discoveryPrefix = prefix
        }
        func flag(_ key: String) throws -> Bool? {
            guard let value = try text(key) else { return nil }
            switch value.lowercased() {
            case "true", "yes", "on": return true
            case "false", "no", "off": return false
            default: throw MQTTSettingsProblem(text: "\(key): got \"\(value)\", not true or false")
            }
        }
        settings.commands = try flag("commands") ?? false
        settings.insecureCommands = try flag("insecure-commands") ?? false
        if settings.commands && !settings.insecureCommands, let reason = settings.unknownCommanders {
            throw MQTTSettingsProblem(
                text: "commands: true would switch this gateway's boards for \(reason); give the bridge a broker user "
                    + "(username, password-file) on an mqtts:// url (or mqtt:// to this machine), and let only named users "
                    + "publish to its command topics in the broker's ACL; insecure-commands: true says it is wanted anyway")
        }
        return settings
    }

    /// Why the broker's clients may be anyone, if they may: the bridge logs in anonymously (a
    /// broker that takes anonymous clients takes anyone's commands), or in plain text across
    /// the network (its password and every command readable and forgeable on the way).
    var unknownCommanders: String? {
        if username == nil { return "anyone who can publish on a broker it reaches anonymously (no username)" }
        if url.hasPrefix("mqtt://") && !Self.isLoopback(url: url) {
            return "anyone on the network path to a broker it reaches in plain text (mqtt:// to another machine)"
        }
        return nil
    }

    /// Whether an `mqtt://` url's host is this machine (localhost, 127.0.0.0/8, ::1).
    static func isLoopback(url: String) -> Bool {
        var rest = url.drop { $0 != "/" }.dropFirst(2)
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        let host: Substring
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
        } else {
            host = rest.prefix { $0 != ":" && $0 != "/" }
        }
        let name = host.lowercased()
        if name == "localhost" || name == "::1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

/// What is wrong with an `mqtt:` section, in a sentence.
public struct MQTTSettingsProblem: Error, Sendable, CustomStringConvertible {
    public let text: String
    public init(text: String) { self.text = text }
    public var description: String { text }
}

/// Why the MQTT password file cannot be used.
public struct MQTTPasswordError: Error, CustomStringConvertible {
    public let description: String
}
