import Foundation
import Glibc

/// The `mqtt:` section of `blefleetd.conf(5)`: the bridge to an MQTT broker, off when absent.
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

    public init(url: String) {
        self.url = url
    }

    /// The sub-keys, each with what it allows.
    static let keys: [(key: String, allowed: String)] = [
        ("url", "mqtt://host[:port] or mqtts://host[:port]"),
        ("gateway", "a name without /, + or # (default: the host name)"),
        ("username", "a user name"),
        ("password-file", "an absolute path to a file only its owner (and group) can read"),
        ("ca-file", "an absolute path to a PEM file"),
        ("topic-prefix", "topic levels like blefleet or site/blefleet, no + or #"),
        ("discovery-prefix", "a topic prefix like homeassistant, or empty for no discovery"),
        ("commands", "true or false"),
    ]

    /// The gateway name: ``gateway``, else the host name up to its first dot.
    public var gatewayName: String {
        if let gateway { return gateway }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "gateway" }
        let host = String(cString: buffer).split(separator: ".").first.map(String.init) ?? ""
        return host.isEmpty ? "gateway" : host
    }

    /// The password from ``passwordFile`` (nil without one); throws a sentence when the
    /// file cannot be read, others can read it, or it is empty.
    public func readPassword() throws -> String? {
        guard let passwordFile else { return nil }
        do {
            return try Self.readPassword(passwordFile)
        } catch let problem as SettingProblem {
            throw MQTTPasswordError(description: problem.text)
        }
    }

    static func readPassword(_ path: String) throws -> String {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw SettingProblem(text: "password-file: cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw SettingProblem(text: "password-file: \(path) is not a regular file")
        }
        guard info.st_mode & 0o007 == 0 else {
            throw SettingProblem(
                text: "password-file: \(path) can be read by others (mode \(String(info.st_mode & 0o777, radix: 8))); "
                    + "run chmod 600 \(path)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingProblem(text: "password-file: cannot read \(path) (check its permissions)")
        }
        let password = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .first.map(String.init) ?? ""
        guard !password.isEmpty else { throw SettingProblem(text: "password-file: \(path) is empty") }
        return password
    }
}

/// Why the MQTT password file cannot be used.
public struct MQTTPasswordError: Error, CustomStringConvertible {
    public let description: String
}
