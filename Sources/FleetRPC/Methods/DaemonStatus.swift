public import JSONRPC

extension FleetMethods {
    /// `daemon.status`.
    public enum DaemonStatus: RPCMethod {
        public static let descriptor = describe(
            "daemon.status", "The daemon's version, uptime, adapter and BlueZ state, and board counts.",
            result: RPCResultDescriptor("status", "The daemon's status."), access: .read, errors: [.permissionDenied])
        public typealias Result = FleetRPC.DaemonStatus
    }
}

/// Result of `daemon.status`.
public struct DaemonStatus: Sendable, Hashable, Codable {
    /// The daemon's version.
    public var version: String
    /// Seconds since the daemon started.
    public var uptimeSeconds: Double
    /// Whether BlueZ is reachable on the system bus.
    public var bluez: Bool
    /// The adapter in use (e.g. `hci0 (00:1A:7D:DA:71:13)`), the first if several; nil if none.
    public var adapter: String?
    /// Whether an adapter is powered.
    public var powered: Bool
    /// Whether a scan is running on an adapter.
    public var discovering: Bool
    /// Every adapter the daemon uses (or was told to use and does not see).
    public var adapters: [Adapter]
    /// Boards known, connected, and ready.
    public var boards: Counts
    /// Clients connected to the socket.
    public var clients: Int
    /// The history of readings (absent from a daemon that keeps none).
    public var history: History?
    /// What one connection may send and have under way (absent from a daemon that does not
    /// tell): a client that passes others' calls on (blefleet-web) refuses a call past them
    /// itself instead of losing its connection.
    public var limits: Limits?
    /// The groups whose members the daemon serves (absent from a daemon that does not tell):
    /// blefleet-web gives a local account no more than these give it on the socket.
    public var access: Access?

    /// The daemon's groups in `daemon.status` (`socket-group`, `read-only-group`).
    public struct Access: Sendable, Hashable, Codable {
        /// Members may call every method.
        public var controlGroup: String
        /// Members may call read methods; absent when the daemon has no read-only group.
        public var readOnlyGroup: String?

        public init(controlGroup: String, readOnlyGroup: String?) {
            (self.controlGroup, self.readOnlyGroup) = (controlGroup, readOnlyGroup)
        }
    }

    /// A connection's limits in `daemon.status` (`max-frame-bytes`, `max-calls-per-client`).
    public struct Limits: Sendable, Hashable, Codable {
        /// The longest frame (a request line) the daemon reads; a longer one closes the connection.
        public var maxFrameBytes: Int
        /// Calls under way at once on one connection; more are answered busy.
        public var maxCallsPerConnection: Int

        public init(maxFrameBytes: Int, maxCallsPerConnection: Int) {
            (self.maxFrameBytes, self.maxCallsPerConnection) = (maxFrameBytes, maxCallsPerConnection)
        }
    }

    /// The history of readings in `daemon.status`.
    public struct History: Sendable, Hashable, Codable {
        /// Whether readings are being kept now.
        public var enabled: Bool
        /// Why not, when they are not.
        public var reason: String?
        /// The SQLite file.
        public var path: String
        /// Readings not kept since the daemon started (the history off, or a write that failed).
        public var dropped: Int

        public init(enabled: Bool, reason: String? = nil, path: String, dropped: Int) {
            (self.enabled, self.reason, self.path, self.dropped) = (enabled, reason, path, dropped)
        }
    }

    /// One adapter in `daemon.status`.
    public struct Adapter: Sendable, Hashable, Codable {
        public var name: String
        /// Its address, while BlueZ shows it.
        public var address: String?
        /// false when BlueZ does not show it (unplugged, or BlueZ not running).
        public var present: Bool
        public var powered: Bool
        public var discovering: Bool
        /// Connection slots in use by the fleet's boards, and the most allowed.
        public var slotsUsed: Int
        public var slotsLimit: Int
        /// The addresses of the boards linked (or being linked) through it.
        public var boards: [String]
        /// Whether its controller works (absent from a daemon that does not tell).
        public var health: AdapterCondition?
        /// Its last recovery from being stuck, if it was since the daemon started.
        public var lastRecovery: Recovery?

        public init(
            name: String, address: String?, present: Bool, powered: Bool, discovering: Bool, slotsUsed: Int,
            slotsLimit: Int, boards: [String] = [], health: AdapterCondition? = nil, lastRecovery: Recovery? = nil
        ) {
            (self.health, self.lastRecovery, self.boards, self.name, self.address) = (health, lastRecovery, boards, name, address)
            (self.present, self.powered, self.discovering, self.slotsUsed) = (present, powered, discovering, slotsUsed)
            self.slotsLimit = slotsLimit
        }
    }

    /// An adapter's recovery from being stuck: why, the last step taken, when it began
    /// and when the controller worked again (absent while it has not).
    public struct Recovery: Sendable, Hashable, Codable {
        public var symptom: AdapterSymptom
        public var step: RecoveryStep
        /// ISO 8601 UTC.
        public var started: String
        public var recovered: String?

        public init(symptom: AdapterSymptom, step: RecoveryStep, started: String, recovered: String? = nil) {
            (self.symptom, self.step, self.started, self.recovered) = (symptom, step, started, recovered)
        }
    }

    public struct Counts: Sendable, Hashable, Codable {
        public var known: Int
        public var connected: Int
        public var ready: Int

        public init(known: Int, connected: Int, ready: Int) {
            (self.known, self.connected, self.ready) = (known, connected, ready)
        }
    }

    public init(
        version: String, uptimeSeconds: Double, bluez: Bool, adapter: String? = nil, powered: Bool,
        discovering: Bool, adapters: [Adapter] = [], boards: Counts, clients: Int,
        history: History? = nil, limits: Limits? = nil, access: Access? = nil
    ) {
        (self.history, self.limits, self.access, self.adapters, self.version) = (history, limits, access, adapters, version)
        (self.uptimeSeconds, self.bluez, self.adapter, self.powered) = (uptimeSeconds, bluez, adapter, powered)
        (self.discovering, self.boards, self.clients) = (discovering, boards, clients)
    }

    enum CodingKeys: String, CodingKey {
        case version, uptimeSeconds, bluez, adapter, powered, discovering, adapters, boards, clients, history, limits, access
    }

    /// A daemon older than `adapters` sends none: then it is an empty list.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(String.self, forKey: .version)
        uptimeSeconds = try container.decode(Double.self, forKey: .uptimeSeconds)
        bluez = try container.decode(Bool.self, forKey: .bluez)
        adapter = try container.decodeIfPresent(String.self, forKey: .adapter)
        powered = try container.decode(Bool.self, forKey: .powered)
        discovering = try container.decode(Bool.self, forKey: .discovering)
        adapters = try container.decodeIfPresent([Adapter].self, forKey: .adapters) ?? []
        boards = try container.decode(Counts.self, forKey: .boards)
        clients = try container.decode(Int.self, forKey: .clients)
        history = try container.decodeIfPresent(History.self, forKey: .history)
        limits = try container.decodeIfPresent(Limits.self, forKey: .limits)
        access = try container.decodeIfPresent(Access.self, forKey: .access)
    }
}
