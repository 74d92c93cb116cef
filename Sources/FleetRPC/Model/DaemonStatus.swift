/// Result of `daemon.status`.
public struct DaemonStatus: Sendable, Hashable, Codable {
    /// The daemon's version.
    public var version: String
    /// Seconds since the daemon started.
    public var uptimeSeconds: Double
    /// Whether BlueZ is reachable on the system bus.
    public var bluez: Bool
    /// The adapter in use (e.g. `hci0`), if any.
    public var adapter: String?
    /// Whether the adapter is powered.
    public var powered: Bool
    /// Whether a scan is running.
    public var discovering: Bool
    /// Boards known, connected, and ready.
    public var boards: Counts
    /// Clients connected to the socket.
    public var clients: Int

    public struct Counts: Sendable, Hashable, Codable {
        public var known: Int
        public var connected: Int
        public var ready: Int

        public init(known: Int, connected: Int, ready: Int) {
            self.known = known
            self.connected = connected
            self.ready = ready
        }
    }

    public init(
        version: String, uptimeSeconds: Double, bluez: Bool, adapter: String? = nil, powered: Bool,
        discovering: Bool, boards: Counts, clients: Int
    ) {
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.bluez = bluez
        self.adapter = adapter
        self.powered = powered
        self.discovering = discovering
        self.boards = boards
        self.clients = clients
    }
}
