import BlueZ

/// Settings of the fleet core; immutable, with defaults for everything.
public struct FleetConfiguration: Sendable, Hashable {
    /// Maximum simultaneous connections per adapter; idle boards are evicted (least recently
    /// used) beyond it. Typical controllers hold 5–9 LE connections.
    public let connectionLimit: Int
    /// Per-adapter overrides of ``connectionLimit``, by interface name or address.
    public let adapterLimits: [String: Int]
    /// Connect operations allowed at once per adapter (parallel connects are fragile).
    public let concurrentConnects: Int
    /// Connection slots of each adapter that clients' leases (`device.connect`) never take:
    /// the fleet's boards always have these to rotate through. At most the adapter's limit
    /// (an adapter with one slot lends clients none, by default).
    public let reservedFleetSlots: Int
    /// Devices one user's clients may hold leased (or be connecting) at once, over all their
    /// connections.
    public let leasesPerUser: Int
    /// Deadline for one connect, from `Device1.Connect` until services are resolved.
    public let connectTimeout: Duration
    /// Deadline for a fan-out command when the caller gives none.
    public let defaultCommandTimeout: Duration
    /// A cached temperature older than this is re-read.
    public let temperatureMaxAge: Duration
    /// With more boards than connection slots, idle time reads the boards that hold no
    /// link in turn, so that no present board's temperature gets older than this.
    public let temperatureRefresh: Duration
    /// Who joins the fleet.
    public let adoption: AdoptionPolicy
    /// Backoff between connect attempts.
    public let reconnect: ReconnectPolicy
    /// Directory holding `boards.json`.
    public let stateDirectory: String
    /// Minimum time between registry saves caused only by `lastSeen` updates.
    public let lastSeenSaveInterval: Duration
    /// Events buffered per subscriber before the oldest are dropped.
    public let eventBufferSize: Int
    /// The kinds of board: the built-in profile and those of files.
    public let profiles: ProfileCatalog

    public init(
        connectionLimit: Int = 7,
        adapterLimits: [String: Int] = [:],
        concurrentConnects: Int = 1,
        reservedFleetSlots: Int = 1,
        leasesPerUser: Int = 4,
        connectTimeout: Duration = .seconds(10),
        defaultCommandTimeout: Duration = .seconds(5),
        temperatureMaxAge: Duration = .seconds(10),
        temperatureRefresh: Duration = .seconds(60),
        adoption: AdoptionPolicy = AdoptionPolicy(),
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        stateDirectory: String = "/var/lib/blefleet",
        lastSeenSaveInterval: Duration = .seconds(60),
        eventBufferSize: Int = 256,
        profiles: ProfileCatalog = .builtIn
    ) {
        self.connectionLimit = max(1, connectionLimit)
        self.adapterLimits = adapterLimits.mapValues { max(1, $0) }
        self.concurrentConnects = max(1, concurrentConnects)
        self.reservedFleetSlots = max(0, reservedFleetSlots)
        self.leasesPerUser = max(0, leasesPerUser)
        self.connectTimeout = connectTimeout
        self.defaultCommandTimeout = defaultCommandTimeout
        self.temperatureMaxAge = temperatureMaxAge
        self.temperatureRefresh = temperatureRefresh
        self.adoption = adoption
        self.reconnect = reconnect
        self.stateDirectory = stateDirectory
        self.lastSeenSaveInterval = lastSeenSaveInterval
        self.eventBufferSize = max(1, eventBufferSize)
        self.profiles = profiles
    }

    /// The connection limit of `adapter`: its override, else ``connectionLimit``.
    func limit(for adapter: BlueZAdapter) -> Int {
        adapterLimits.first { AdapterSelection.names($0.key, adapter) }?.value ?? connectionLimit
    }
}
