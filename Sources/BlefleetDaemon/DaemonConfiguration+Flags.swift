extension DaemonConfiguration {
    /// Command-line values, applied over the file. nil means "not given".
    public struct Overrides: Sendable {
        public var socket: String?
        public var stateDirectory: String?
        /// `--adapter`, as often as given; empty when not given.
        public var adapter: [String]
        public var bus: String?
        public var logTarget: String?

        public init(
            socket: String? = nil, stateDirectory: String? = nil, adapter: [String] = [],
            bus: String? = nil, logTarget: String? = nil
        ) {
            self.socket = socket
            self.stateDirectory = stateDirectory
            self.adapter = adapter
            self.bus = bus
            self.logTarget = logTarget
        }
    }

    /// Applies flags over the configuration; a bad value is a `ConfigurationError` naming the flag.
    public mutating func apply(_ overrides: Overrides) throws {
        func check<T>(_ flag: String, _ allowed: String, _ body: () throws -> T) throws -> T {
            do {
                return try body()
            } catch let problem as SettingProblem {
                throw ConfigurationError(source: "command line", key: flag, problem: "\(problem.text); allowed: \(allowed)")
            }
        }
        if let socket = overrides.socket {
            guard socket.hasPrefix("/") else {
                throw ConfigurationError(
                    source: "command line", key: "--socket", problem: "got \"\(socket)\"; allowed: an absolute path")
            }
            socketPath = socket
        }
        if let dir = overrides.stateDirectory {
            guard dir.hasPrefix("/") else {
                throw ConfigurationError(
                    source: "command line", key: "--state-dir", problem: "got \"\(dir)\"; allowed: an absolute path")
            }
            stateDirectory = dir
        }
        if !overrides.adapter.isEmpty {
            self.adapter = try check("--adapter", "an adapter name like hci0, its address, or `all`; give it once per adapter") {
                try Self.adapterSelection(overrides.adapter)
            }
        }
        if let bus = overrides.bus {
            self.bus = try check("--bus", "`system`, or a D-Bus address like unix:path=/run/dbus/system_bus_socket") {
                try Self.busAddress(bus)
            }
        }
        if let target = overrides.logTarget {
            guard let setting = LogTargetSetting(rawValue: target) else {
                throw ConfigurationError(
                    source: "command line", key: "--log-target", problem: "got \"\(target)\"; allowed: auto, journal or stderr")
            }
            logTarget = setting
        }
    }
}
