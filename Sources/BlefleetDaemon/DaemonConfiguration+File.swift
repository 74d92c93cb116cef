import FleetCore
import Foundation
import FleetHistory
import FleetMQTTSettings
import Yams

extension DaemonConfiguration {
    /// The keys the file accepts, each with what it allows (shown in errors and in
    /// `blefleetd.conf(5)`).
    public static let fileKeys: [(key: String, allowed: String)] = settings.map { ($0.key, $0.allowed) }

    /// Reads `path` over `self`. A missing file is not an error when `required` is false
    /// (the default path need not exist); any other problem is a `ConfigurationError` naming
    /// the line, the key and what is allowed.
    public mutating func apply(file path: String, required: Bool) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            if required {
                throw ConfigurationError(source: path, problem: "no such file")
            }
            return
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(source: path, problem: "cannot be read (check its permissions)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(source: path, problem: "is not UTF-8 text")
        }
        try apply(text: text, source: path)
    }

    /// Parses YAML `text` (a mapping of `key: value`) over `self`.
    public mutating func apply(text: String, source: String) throws {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw ConfigurationError(source: source, problem: "is not valid YAML: \(Self.describe(error))")
        } catch {
            throw ConfigurationError(source: source, problem: "is not valid YAML: \(error)")
        }
        guard let root else { return }  // empty or only comments
        guard let mapping = root.mapping else {
            throw ConfigurationError(
                source: source, line: root.mark.map(\.line),
                problem: "must be a list of `key: value` lines, like `adapter: hci0`")
        }
        var seen: Set<String> = []
        for (keyNode, valueNode) in mapping {
            let line = keyNode.mark?.line
            guard let key = keyNode.string else {
                throw ConfigurationError(source: source, line: line, problem: "keys must be plain words")
            }
            guard let setting = Self.settings.first(where: { $0.key == key }) else {
                throw ConfigurationError(
                    source: source, line: line, key: key,
                    problem: "unknown key; known keys are \(Self.settings.map(\.key).joined(separator: ", "))")
            }
            guard seen.insert(key).inserted else {
                throw ConfigurationError(source: source, line: line, key: key, problem: "is set twice")
            }
            do {
                try setting.apply(&self, valueNode)
            } catch let problem as SettingProblem {
                throw ConfigurationError(
                    source: source, line: valueNode.mark?.line ?? line, key: key,
                    problem: "\(problem.text); allowed: \(setting.allowed)")
            }
        }
    }

    private static func describe(_ error: YamlError) -> String {
        // YamlError's description carries the line and a caret picture; keep its first line.
        String(describing: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
    }
}

/// Why one value was refused.
struct SettingProblem: Error {
    let text: String
}

/// One configuration key: what it allows and how it is applied.
struct Setting: Sendable {
    let key: String
    let allowed: String
    let apply: @Sendable (inout DaemonConfiguration, Node) throws -> Void
}

extension DaemonConfiguration {
    static let settings: [Setting] = [
        Setting(key: "socket", allowed: "an absolute path") { config, node in
            config.socketPath = try absolutePath(node)
        },
        Setting(key: "socket-group", allowed: "a group name") { config, node in
            config.controlGroup = try groupName(node)
        },
        Setting(key: "read-only-group", allowed: "a group name, or empty for none") { config, node in
            let text = try scalar(node)
            config.readOnlyGroup = text.isEmpty ? nil : try groupName(node)
        },
        Setting(key: "state-dir", allowed: "an absolute path") { config, node in
            config.stateDirectory = try absolutePath(node)
        },
        Setting(
            key: "adapter",
            allowed: "an adapter name like hci0 or its address like 00:1A:7D:DA:71:13, a list of them like [hci0, hci1], or `all`"
        ) { config, node in
            if let sequence = node.sequence {
                config.adapter = try adapterSelection(sequence.map { item in
                    guard let text = item.scalar?.string else { throw SettingProblem(text: "every entry must be a single name") }
                    return text
                })
            } else {
                config.adapter = try adapterSelection([try scalar(node)])
            }
        },
        Setting(key: "bus", allowed: "`system`, or a D-Bus address like unix:path=/run/dbus/system_bus_socket")
        { config, node in
            config.bus = try busAddress(try scalar(node))
        },
        Setting(key: "log-target", allowed: "auto, journal or stderr") { config, node in
            let text = try scalar(node)
            guard let target = LogTargetSetting(rawValue: text) else { throw SettingProblem(text: "got \"\(text)\"") }
            config.logTarget = target
        },
        Setting(key: "log-level", allowed: "trace, debug, info, notice, warning, error or critical") { config, node in
            let text = try scalar(node)
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(text) else {
                throw SettingProblem(text: "got \"\(text)\"")
            }
            config.logLevel = text
        },
        Setting(
            key: "connection-limit",
            allowed: "a whole number from 1 to 32 (per adapter), or a mapping like {default: 5, hci1: 3}"
        ) { config, node in
            guard let mapping = node.mapping else {
                config.connectionLimit = try integer(node, in: 1...32)
                config.adapterConnectionLimits = [:]
                return
            }
            var limits: [String: Int] = [:]
            var fallback: Int?
            for (keyNode, valueNode) in mapping {
                guard let key = keyNode.string else { throw SettingProblem(text: "keys must be adapter names") }
                let value = try integer(valueNode, in: 1...32)
                if key == "default" {
                    fallback = value
                } else {
                    let name = try adapterName(key)
                    guard limits[name] == nil else { throw SettingProblem(text: "\(name) is given twice") }
                    limits[name] = value
                }
            }
            if let fallback { config.connectionLimit = fallback }
            config.adapterConnectionLimits = limits
        },
        Setting(key: "reserved-fleet-slots", allowed: "a whole number from 0 to 32 (per adapter)") { config, node in
            config.reservedFleetSlots = try integer(node, in: 0...32)
        },
        Setting(key: "leases-per-user", allowed: "a whole number from 0 to 1024") { config, node in
            config.leasesPerUser = try integer(node, in: 0...1024)
        },
        Setting(key: "subscriptions-per-connection", allowed: "a whole number from 1 to 4096") { config, node in
            config.subscriptionsPerConnection = try integer(node, in: 1...4096)
        },
        Setting(key: "auto-adopt", allowed: "true or false") { config, node in
            config.autoAdopt = try boolean(node)
        },
        Setting(key: "allow", allowed: "a list of addresses, names or globs, e.g. [\"nano-*\", \"F0:0D:00:00:00:01\"]")
        { config, node in
            guard let sequence = node.sequence else {
                if let text = node.scalar?.string, !text.isEmpty { config.allow = [text]; return }
                throw SettingProblem(text: "expected a list")
            }
            config.allow = try sequence.map { item in
                guard let text = item.scalar?.string, !text.isEmpty else {
                    throw SettingProblem(text: "every entry must be a non-empty word")
                }
                return text
            }
        },
        Setting(key: "profile-dir", allowed: "an absolute path (board profiles, blefleet-profile(5))") { config, node in
            config.profileDirectory = try absolutePath(node)
        },
        Setting(key: "connect-timeout-ms", allowed: "a whole number of milliseconds from 1000 to 120000") { config, node in
            config.connectTimeoutMilliseconds = try integer(node, in: 1000...120_000)
        },
        Setting(key: "default-timeout-ms", allowed: "a whole number of milliseconds from 100 to 600000") { config, node in
            config.defaultTimeoutMilliseconds = try integer(node, in: 100...600_000)
        },
        Setting(key: "temperature-max-age-ms", allowed: "a whole number of milliseconds from 0 to 3600000")
        { config, node in
            config.temperatureMaxAgeMilliseconds = try integer(node, in: 0...3_600_000)
        },
        Setting(key: "temperature-refresh-s", allowed: "a whole number of seconds from 10 to 86400") { config, node in
            config.temperatureRefreshSeconds = try integer(node, in: 10...86_400)
        },
        Setting(key: "max-frame-bytes", allowed: "a whole number from 1024 to 67108864") { config, node in
            config.maxFrameBytes = try integer(node, in: 1024...67_108_864)
        },
        Setting(key: "max-calls-per-client", allowed: "a whole number from 1 to 4096") { config, node in
            config.maxCallsPerClient = try integer(node, in: 1...4096)
        },
        Setting(key: "max-connections-per-user", allowed: "a whole number from 1 to 65536") { config, node in
            config.maxConnectionsPerUser = try integer(node, in: 1...65_536)
        },
        Setting(key: "max-connections", allowed: "a whole number from 1 to 65536") { config, node in
            config.maxConnections = try integer(node, in: 1...65_536)
        },
        Setting(key: "idle-timeout-s", allowed: "a whole number of seconds from 0 to 86400 (0: never)") { config, node in
            config.idleTimeoutSeconds = try integer(node, in: 0...86_400)
        },
        Setting(key: "max-batch-calls", allowed: "a whole number from 1 to 4096") { config, node in
            config.maxBatchCalls = try integer(node, in: 1...4096)
        },
        Setting(key: "max-calls-per-user", allowed: "a whole number from 1 to 65536") { config, node in
            config.maxCallsPerUser = try integer(node, in: 1...65_536)
        },
        Setting(key: "max-calls-in-flight", allowed: "a whole number from 2 to 65536") { config, node in
            config.maxCallsInFlight = try integer(node, in: 2...65_536)
        },
        Setting(
            key: "reserved-control-calls", allowed: "a whole number from 0 to 65535 (at most max-calls-in-flight - 1 are kept)"
        ) { config, node in
            config.reservedControlCalls = try integer(node, in: 0...65_535)
        },
        Setting(key: "max-queued-notifications", allowed: "a whole number from 16 to 1000000") { config, node in
            config.maxQueuedNotifications = try integer(node, in: 16...1_000_000)
        },
        Setting(
            key: "mqtt",
            allowed: "a mapping of " + MQTTSettings.keys.map(\.key).joined(separator: ", ")
                + " (see blefleetd.conf(5)), or empty for none"
        ) { config, node in
            if let scalar = node.scalar, ["", "~", "null"].contains(scalar.string) {
                config.mqtt = nil
                return
            }
            config.mqtt = try mqttSettings(node)
        },
        Setting(
            key: "history",
            allowed: "a mapping of " + HistorySettings.keys.map(\.key).joined(separator: ", ") + " (see blefleetd.conf(5))"
        ) { config, node in
            config.history = try historySettings(node)
        },
    ]

    static func historySettings(_ node: Node) throws -> HistorySettings {
        guard let mapping = node.mapping else {
            throw SettingProblem(text: "expected a mapping of " + HistorySettings.keys.map(\.key).joined(separator: ", "))
        }
        var settings = HistorySettings()
        var seen = Set<String>()
        for (keyNode, value) in mapping {
            guard let key = keyNode.string else { throw SettingProblem(text: "keys must be plain words") }
            guard seen.insert(key).inserted else { throw SettingProblem(text: "\(key) is set twice") }
            func problem(_ error: any Error) -> SettingProblem {
                let allowed = HistorySettings.keys.first { $0.key == key }?.allowed ?? ""
                return SettingProblem(text: "\(key): \((error as? SettingProblem)?.text ?? "\(error)"); allowed: \(allowed)")
            }
            do {
                switch key {
                case "enabled": settings.enabled = try boolean(value)
                case "raw-days": settings.rawDays = try integer(value, in: 1...3650)
                case "five-minute-days": settings.fiveMinuteDays = try integer(value, in: 1...36500)
                case "max-size-mb": settings.maxBytes = Int64(try integer(value, in: 1...1_048_576)) << 20
                default:
                    throw SettingProblem(
                        text: "\(key) is not a key of history; its keys are \(HistorySettings.keys.map(\.key).joined(separator: ", "))")
                }
            } catch let error as SettingProblem where error.text.hasPrefix(key) {
                throw error
            } catch {
                throw problem(error)
            }
        }
        return settings
    }

    static func mqttSettings(_ node: Node) throws -> MQTTSettings {
        do {
            return try MQTTSettings.parse(node)
        } catch {
            throw SettingProblem(text: error.text)
        }
    }

    static func scalar(_ node: Node) throws -> String {
        guard let scalar = node.scalar else { throw SettingProblem(text: "expected a single value, not a list or map") }
        return scalar.string
    }

    static func absolutePath(_ node: Node) throws -> String {
        let text = try scalar(node)
        guard text.hasPrefix("/"), !text.contains("\0") else { throw SettingProblem(text: "got \"\(text)\"") }
        return text
    }

    static func groupName(_ node: Node) throws -> String {
        let text = try scalar(node)
        let valid = !text.isEmpty && text.count <= 32
            && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }
        guard valid else { throw SettingProblem(text: "got \"\(text)\"") }
        return text
    }

    static func integer(_ node: Node, in range: ClosedRange<Int>) throws -> Int {
        let text = try scalar(node)
        guard let value = Int(text.replacingOccurrences(of: "_", with: "")), range.contains(value) else {
            throw SettingProblem(text: "got \"\(text)\"")
        }
        return value
    }

    static func boolean(_ node: Node) throws -> Bool {
        let text = try scalar(node)
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw SettingProblem(text: "got \"\(text)\"")
        }
    }

    /// `hci0`-style names or a Bluetooth address (normalized to upper case).
    static func adapterName(_ text: String) throws -> String {
        if text.hasPrefix("hci"), text.count > 3, text.dropFirst(3).allSatisfy(\.isNumber) { return text }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 6, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) }) {
            return text.uppercased()
        }
        throw SettingProblem(text: "got \"\(text)\"")
    }

    /// The adapters named by `--adapter` flags or the `adapter` key: `all`, or names and
    /// addresses (each once).
    static func adapterSelection(_ texts: [String]) throws -> AdapterSelection {
        guard !texts.isEmpty else { throw SettingProblem(text: "got an empty list") }
        if texts.contains("all") {
            guard texts.count == 1 else { throw SettingProblem(text: "`all` cannot be combined with names") }
            return .all
        }
        var names: [String] = []
        for text in texts {
            let name = try adapterName(text)
            guard !names.contains(name) else { throw SettingProblem(text: "\(name) is given twice") }
            names.append(name)
        }
        return .named(names)
    }

    /// `system` or something that looks like a D-Bus address (`transport:key=value,…`).
    static func busAddress(_ text: String) throws -> String {
        if text == "system" { return text }
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex,
            text[text.index(after: colon)...].contains("=")
        else {
            throw SettingProblem(text: "got \"\(text)\"")
        }
        return text
    }
}
