import JSONRPC
public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle
import Synchronization

/// The daemon's JSON-RPC 2.0 server on a Unix socket: one JSON text per line, written the
/// way NIO's async servers are: each accepted connection is an `NIOAsyncChannel` served by
/// one structured task (``RPCConnectionHandler``), its calls child tasks of it, bounded in
/// number (``CallAdmission``); a call that never waits (`daemon.status`) is answered on the
/// event loop as it is read (``ImmediateCalls``); graceful drain by `ServerQuiescingHelper`.
///
/// `bind()` creates the socket (``RPCListener``; errors surface at start, before the daemon
/// reports ready); nothing is answered until `run()`, which serves until graceful shutdown
/// (SIGTERM through a `ServiceGroup`, or ``triggerGracefulShutdown()``): it stops accepting,
/// each connection stops reading new calls, calls in flight get
/// ``RPCServerConfiguration/shutdownGracePeriod`` to finish and answer, then they are
/// cancelled. Its life is one ``StateMachine`` value behind a lock; this type carries out
/// what its transitions return.
public final class RPCServer: Service, Sendable {
    typealias Lifecycle = StateMachine<RPCListener, CheckedContinuation<Void, Never>>

    public let configuration: RPCServerConfiguration
    let logger: Logger
    let state = Mutex(Lifecycle())
    private let group: any EventLoopGroup
    private let handler: RPCConnectionHandler
    /// Connections refused for their user's count or the server's, logged once a minute per user.
    private let refusedConnections = ThrottledNotes()
    /// Refused connections still being told why (each reads what its client sent for a second
    /// at most, so the line is not lost): past ``maxLingeringRefusals`` the next are told and
    /// closed at once, so that refusals hold no more descriptors than that.
    private let lingeringRefusals = Atomic<Int>(0)
    static let maxLingeringRefusals = 64

    public init(
        configuration: RPCServerConfiguration, dispatcher: JSONRPCDispatcher, logger: Logger,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.configuration = configuration
        self.logger = logger
        self.group = eventLoopGroup
        self.handler = RPCConnectionHandler(dispatcher: dispatcher, configuration: configuration)
    }

    /// Connections open now (or with calls still finishing).
    public var connectionCount: Int { state.withLock { $0.connectionCount } }

    /// Calls in flight now on every connection together (a batch's items each count).
    public var callsInFlight: Int { handler.callsInFlight }

    /// Creates the listening socket (file mode and group set) unless already done: binding
    /// twice is a no-op.
    public func bind() async throws {
        switch state.withLock({ $0.bind() }) {
        case .none: return
        case .refuse(let error): throw error
        case .create: break
        }
        let socket: RPCListener
        do {
            socket = try await RPCListener.bind(configuration: configuration, dispatcher: handler.dispatcher, group: group)
        } catch {
            state.withLock { $0.bindFailed() }
            throw error
        }
        // Shutdown may have begun while the socket was being made.
        switch state.withLock({ $0.socketCreated(socket) }) {
        case .keep: break
        case .close(let socket): socket.close()
        }
    }

    public func run() async throws {
        try await bind()
        let socket: RPCListener
        switch state.withLock({ $0.run() }) {
        case .serve(let listening): socket = listening
        case .refuse(let error): throw error
        case .returnAtOnce:
            logger.info("JSON-RPC server shut down before it served")
            return
        }
        logger.info("Serving JSON-RPC", metadata: ["rpc.socket": "\(configuration.listener)"])
        await withDiscardingTaskGroup { connections in
            await withGracefulShutdownHandler {
                do {
                    try await socket.channel.executeThenClose { inbound in
                        for try await accepted in inbound {
                            let uid = accepted.credentials.uid
                            switch state.withLock({
                                $0.connectionAccepted(
                                    uid: uid, perUserLimit: configuration.maxConnectionsPerUser,
                                    totalLimit: configuration.maxConnections)
                            }) {
                            case .serve(let id): connections.addTask { await self.serve(accepted, id: id) }
                            case .close: accepted.close()
                            case .refuse(let limit):
                                refuse(
                                    accepted, limit: limit, why: "its user has too many open",
                                    "uid \(uid) has \(limit) connections to blefleetd open, the most one user may (max-connections-per-user); close one first.")
                            case .refuseFull(let limit):
                                refuse(
                                    accepted, limit: limit, why: "the server has as many open as it keeps",
                                    "blefleetd has \(limit) connections open, the most it keeps (max-connections); try again later.")
                            }
                        }
                    }
                } catch {
                    logger.error("The server socket failed", metadata: ["error": "\(error)"])
                }
            } onGracefulShutdown: {
                self.triggerGracefulShutdown()
            }
            // No more connections are accepted (shutdown, or this task was cancelled).
            triggerGracefulShutdown()
            socket.removeSocketFile()
            if await !drained(within: configuration.shutdownGracePeriod) {
                logger.warning("Calls still in flight after the shutdown grace period are cancelled")
                connections.cancelAll()
            }
        }
        state.withLock { $0.runEnded() }
        logger.info("JSON-RPC server stopped")
    }

    /// Begins graceful shutdown: stop accepting, and each connection stops reading new calls;
    /// calls in flight finish (within the grace period) and their replies are sent. Before
    /// `run()`, the socket is closed and `run()` returns at once.
    public func triggerGracefulShutdown() {
        switch state.withLock({ $0.triggerGracefulShutdown() }) {
        case .none: break
        case .quiesce(let socket): socket.quiesce()
        case .close(let socket): socket.close()
        }
    }

    /// Tells a connection the server does not serve why (`-32004`, `message`) and closes it.
    private func refuse(_ accepted: AcceptedConnection, limit: Int, why: String, _ message: String) {
        let uid = accepted.credentials.uid
        let frame = RPCResponse(id: .null, error: RPCError(.busy, message)).serialized()
        let lingering = lingeringRefusals.add(1, ordering: .relaxed).newValue <= Self.maxLingeringRefusals
        accepted.refuse(with: frame, lingering: lingering ? .seconds(1) : .zero) {
            self.lingeringRefusals.subtract(1, ordering: .relaxed)
        }
        refusedConnections.note(uid) { suppressed in
            logger.notice(
                "Refused a connection: \(why)",
                metadata: [
                    "client.uid": "\(uid)", "client.pid": "\(accepted.credentials.pid)",
                    "rpc.limit": "\(limit)", "rpc.refusals.unlogged": "\(suppressed)",
                ])
        }
    }

    private func serve(_ accepted: AcceptedConnection, id: UInt64) async {
        await handler.serve(accepted, id: id, logger: logger)
        if case .resume(let waiters) = state.withLock({ $0.connectionClosed(uid: accepted.credentials.uid) }) {
            for waiter in waiters { waiter.resume() }
        }
    }
}
