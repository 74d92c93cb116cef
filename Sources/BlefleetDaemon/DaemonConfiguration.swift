public import FleetCore
public import FleetHistory
public import FleetMQTTSettings

/// Everything `blefleetd` can be told, from `/etc/blefleet/blefleetd.conf` and its flags.
/// Flags override the file; the file overrides the defaults below.
public struct DaemonConfiguration: Sendable, Equatable {
    /// Where the daemon is reached (`--socket`, `socket`).
    public var socketPath: String = "/run/blefleet/blefleetd.sock"
    /// Group that owns the socket and may do everything (`socket-group`).
    public var controlGroup: String = "blefleet"
    /// Group whose members may call read-only methods; nil for none (`read-only-group`).
    public var readOnlyGroup: String? = nil
    /// Where the board registry is kept (`--state-dir`, `state-dir`).
    public var stateDirectory: String = "/var/lib/blefleet"
    /// The adapters to own: interface names or addresses, or every adapter BlueZ shows
    /// (`--adapter`, `adapter`).
    public var adapter: AdapterSelection = .named("hci0")
    /// The bus BlueZ is on: `system` or a D-Bus address (`--bus`, `bus`).
    public var bus: String = "system"
    /// `auto`, `journal` or `stderr` (`--log-target`, `log-target`).
    public var logTarget: LogTargetSetting = .auto
    /// `trace` … `critical` (`log-level`).
    public var logLevel: String = "info"
    /// Most boards connected at once through one adapter (`connection-limit`).
    public var connectionLimit: Int = 7
    /// Per-adapter overrides of ``connectionLimit`` by name or address (`connection-limit`
    /// as a mapping).
    public var adapterConnectionLimits: [String: Int] = [:]
    /// Connection slots of each adapter clients' leases never take (`reserved-fleet-slots`).
    public var reservedFleetSlots: Int = 1
    /// Devices one user may hold leased at once (`leases-per-user`).
    public var leasesPerUser: Int = 4
    /// Characteristics one connection may follow at once (`subscriptions-per-connection`).
    public var subscriptionsPerConnection: Int = 32
    /// Adopt every board that advertises the LED service (`auto-adopt`).
    public var autoAdopt: Bool = true
    /// If not empty, only boards whose address or name matches one of these are adopted (`allow`).
    public var allow: [String] = []
    /// Deadline of one connect, from `Device1.Connect` until services are resolved, in
    /// milliseconds (`connect-timeout-ms`).
    public var connectTimeoutMilliseconds: Int = 10_000
    /// Fan-out deadline when a call gives none, in milliseconds (`default-timeout-ms`).
    public var defaultTimeoutMilliseconds: Int = 5000
    /// With more boards than slots, no present board's temperature gets older than this
    /// (`temperature-refresh-s`): idle time reads the boards without a link in turn.
    public var temperatureRefreshSeconds: Int = 60
    /// Cached temperatures younger than this are served without a read (`temperature-max-age-ms`).
    public var temperatureMaxAgeMilliseconds: Int = 10_000
    /// Largest JSON-RPC frame accepted (`max-frame-bytes`).
    public var maxFrameBytes: Int = 1 << 20
    /// Calls one client may have in flight (`max-calls-per-client`).
    public var maxCallsPerClient: Int = 64
    /// Connections one user other than root may have open (`max-connections-per-user`).
    public var maxConnectionsPerUser: Int = 64
    /// Connections of users other than root open at once, all together (`max-connections`).
    public var maxConnections: Int = 1024
    /// Seconds a connection with no call in flight that holds nothing may stay silent before
    /// it is closed; 0 for never (`idle-timeout-s`).
    public var idleTimeoutSeconds: Int = 300
    /// Calls one batch may hold (`max-batch-calls`).
    public var maxBatchCalls: Int = 64
    /// Calls one user other than root may have in flight on all its connections (`max-calls-per-user`).
    public var maxCallsPerUser: Int = 256
    /// Calls in flight for everyone together (`max-calls-in-flight`).
    public var maxCallsInFlight: Int = 1024
    /// Of `max-calls-in-flight`, the places only control users' calls may take (`reserved-control-calls`).
    public var reservedControlCalls: Int = 512
    /// Notifications queued for a client that does not read before it is dropped (`max-queued-notifications`).
    public var maxQueuedNotifications: Int = 1024
    /// The bridge to an MQTT broker (`mqtt`); nil: off.
    public var mqtt: MQTTSettings? = nil
    /// How the history of readings is kept (`history`); its file is in the state directory.
    public var history: HistorySettings = HistorySettings()
    /// Where board profiles are (`blefleet-profile(5)`): every `*.yaml` there.
    public var profileDirectory: String = "/etc/blefleet/profiles"

    public init() {}

    public enum LogTargetSetting: String, Sendable, Equatable, CaseIterable {
        case auto, journal, stderr
    }
}
