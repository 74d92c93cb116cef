/// How the JSON-RPC server listens and what it bounds. Immutable once the server is made.
public struct RPCServerConfiguration: Sendable {
    /// Where to listen.
    public enum Listener: Sendable, Hashable {
        /// Create (replacing a stale file) and listen on a Unix socket at this path.
        case path(String)
        /// Serve an already-listening socket, e.g. fd 3 from systemd socket activation.
        case fileDescriptor(Int32)
    }

    public var listener: Listener
    /// Permission bits of the socket file (`.path` only). Connecting needs write permission.
    public var socketMode: UInt32
    /// Group owning the socket file (`.path` only); `nil` leaves the owner group. The server
    /// fails at start with a clear error if the group does not exist.
    public var socketGroup: String?
    /// Longest frame accepted, newline excluded; a longer one is answered with `-32010` and
    /// the connection closed.
    public var maxFrameBytes: Int
    /// Calls a connection may have running at once, a batch's every item counting as one;
    /// more are answered with `-32004`.
    public var maxCallsInFlightPerConnection: Int
    /// Calls one batch may hold; a longer batch is refused whole with `-32600`.
    public var maxBatchCalls: Int
    /// Calls one user (uid) other than root may have running at once on all its connections
    /// together; more are answered with `-32004`.
    public var maxCallsInFlightPerUser: Int
    /// Calls the server runs at once for everyone together; more are answered with `-32004`.
    public var maxCallsInFlight: Int
    /// Of ``maxCallsInFlight``, the places only control callers may take: a read-only
    /// caller's call is refused once `maxCallsInFlight - reservedControlCalls` are running.
    public var reservedControlCalls: Int
    /// Notifications queued for a connection that is not reading; beyond this the connection
    /// is closed. (A reply waits in its call, which holds a slot of `maxCallsInFlightPerConnection`.)
    public var maxQueuedFramesPerConnection: Int
    /// Connections one user (uid) other than root may have open at once; more are answered
    /// `-32004` and closed.
    public var maxConnectionsPerUser: Int
    /// Connections of users other than root open at once, everyone together; one more is
    /// answered `-32004` and closed.
    public var maxConnections: Int
    /// How long a connection with no call in flight that holds nothing (no subscription, no
    /// lease: nothing a handler registered ``RPCConnection/onClose(_:)`` for) may stay silent
    /// before the server closes it; `nil`: never.
    public var idleTimeout: Duration?
    /// How long in-flight calls may run after shutdown begins before they are cancelled.
    public var shutdownGracePeriod: Duration
    /// Listen backlog.
    public var backlog: Int32

    public init(
        listener: Listener,
        socketMode: UInt32 = 0o660,
        socketGroup: String? = "blefleet",
        maxFrameBytes: Int = 1 << 20,
        maxCallsInFlightPerConnection: Int = 64,
        maxBatchCalls: Int = 64,
        maxCallsInFlightPerUser: Int = 256,
        maxCallsInFlight: Int = 1024,
        reservedControlCalls: Int = 512,
        maxQueuedFramesPerConnection: Int = 1024,
        maxConnectionsPerUser: Int = 64,
        maxConnections: Int = 1024,
        idleTimeout: Duration? = .seconds(300),
        shutdownGracePeriod: Duration = .seconds(5),
        backlog: Int32 = 256
    ) {
        self.listener = listener
        self.socketMode = socketMode
        self.socketGroup = socketGroup
        self.maxFrameBytes = maxFrameBytes
        self.maxCallsInFlightPerConnection = maxCallsInFlightPerConnection
        self.maxBatchCalls = maxBatchCalls
        self.maxCallsInFlightPerUser = maxCallsInFlightPerUser
        self.maxCallsInFlight = maxCallsInFlight
        self.reservedControlCalls = reservedControlCalls
        self.maxQueuedFramesPerConnection = maxQueuedFramesPerConnection
        self.maxConnectionsPerUser = maxConnectionsPerUser
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
        self.shutdownGracePeriod = shutdownGracePeriod
        self.backlog = backlog
    }
}
