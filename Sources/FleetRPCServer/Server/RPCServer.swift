import FleetRPC
import Glibc
public import Logging
import NIOConcurrencyHelpers
public import NIOCore
public import NIOPosix
public import ServiceLifecycle

/// The daemon's JSON-RPC 2.0 server on a Unix socket: one JSON text per line, each
/// connection served concurrently with bounded frames, calls in flight and queued output.
///
/// `bind()` creates the socket (errors surface at start, before the daemon reports ready) but
/// accepts nothing: clients wait in the listen backlog until `run()`, which
/// serves until graceful shutdown (SIGTERM through a `ServiceGroup`, or
/// ``triggerGracefulShutdown()``): it stops accepting, stops reading new calls, gives calls in
/// flight ``RPCServerConfiguration/shutdownGracePeriod``, then cancels them and closes.
public final class RPCServer: Service, Sendable {
    private struct Registered {
        let channel: any Channel
        /// Cancels the connection's calls in flight (end of the shutdown grace period).
        let cancelCalls: @Sendable () -> Void
    }

    private struct State {
        var listener: (any Channel)?
        var bound = false
        var shuttingDown = false
        var connections: [UInt64: Registered] = [:]
        var nextConnectionID: UInt64 = 1
        /// Waiting in `run()` for the last connection to go (after shutdown began).
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    public let configuration: RPCServerConfiguration
    let dispatcher: JSONRPCDispatcher
    let logger: Logger
    private let group: any EventLoopGroup
    private let state = NIOLockedValueBox(State())
    private let shutdownSignal = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    public init(
        configuration: RPCServerConfiguration, dispatcher: JSONRPCDispatcher, logger: Logger,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.configuration = configuration
        self.dispatcher = dispatcher
        self.logger = logger
        self.group = eventLoopGroup
    }

    /// Connections open now (or with calls still finishing).
    public var connectionCount: Int { state.withLockedValue { $0.connections.count } }

    /// Creates the listening socket (file mode and group set) unless already done.
    public func bind() async throws {
        guard state.withLockedValue({ state in
            defer { state.bound = true }
            return !state.bound
        }) else { return }
        do {
            let listener = try await makeListener()
            state.withLockedValue { $0.listener = listener }
        } catch {
            state.withLockedValue { $0.bound = false }
            throw error
        }
    }

    public func run() async throws {
        try await bind()
        guard let listener = state.withLockedValue({ state in
            defer { state.listener = nil }
            return state.listener
        }) else {
            throw RPCServerError("The server's socket is already being served by another run().")
        }
        try await listener.setOption(.autoRead, value: true).get()
        logger.info("Serving JSON-RPC", metadata: ["rpc.socket": "\(configuration.listener)"])
        await withGracefulShutdownHandler {
            // Serves (on the event loops) until shutdown is asked for or this task is cancelled.
            for await _ in shutdownSignal.stream { break }
        } onGracefulShutdown: {
            self.triggerGracefulShutdown()
        }
        triggerGracefulShutdown()
        try? await listener.close()
        if case .path(let path) = configuration.listener {
            unlink(path)
        }
        if await !drained(within: configuration.shutdownGracePeriod) {
            logger.warning("Calls still in flight after the shutdown grace period are cancelled")
            let connections = state.withLockedValue { Array($0.connections.values) }
            for connection in connections { connection.cancelCalls() }
            if await !drained(within: .seconds(2)) {
                for connection in state.withLockedValue({ Array($0.connections.values) }) {
                    connection.channel.close(promise: nil)
                }
            }
        }
        logger.info("JSON-RPC server stopped")
    }

    /// Begins graceful shutdown: stop accepting and reading new calls; calls in flight finish
    /// (within the grace period) and their replies are sent.
    public func triggerGracefulShutdown() {
        let channels = state.withLockedValue { state -> [any Channel] in
            guard !state.shuttingDown else { return [] }
            state.shuttingDown = true
            return state.connections.values.map(\.channel)
        }
        shutdownSignal.continuation.yield()
        for channel in channels {
            channel.close(mode: .input, promise: nil)
        }
    }

    /// Whether every connection went within `limit`.
    private func drained(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let now = self.state.withLockedValue { state -> Bool in
                        guard !state.connections.isEmpty else { return true }
                        state.drainWaiters.append(continuation)
                        return false
                    }
                    if now { continuation.resume() }
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            if !first { self.resumeDrainWaiters() }  // ends the waiting child
            await group.waitForAll()
            return first
        }
    }

    private func resumeDrainWaiters() {
        let waiters = state.withLockedValue { state in
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Listening socket

    private func makeListener() async throws -> any Channel {
        let maxFrame = configuration.maxFrameBytes
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: configuration.backlog)
            // Bound early (errors surface at start), but nothing is accepted before `run()`:
            // until then clients wait in the listen backlog.
            .serverChannelOption(.autoRead, value: false)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { [self] channel in
                guard let provider = channel as? any SocketOptionProvider else {
                    return channel.eventLoop.makeFailedFuture(RPCServerError("The connection has no socket options."))
                }
                let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
                    level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
                return credentials.flatMapThrowing { cred in
                    try channel.pipeline.syncOperations.addHandlers(
                        ByteToMessageHandler(NewlineFrameDecoder(maximumFrameBytes: maxFrame)),
                        RPCConnectionHandler(
                            server: self, credentials: PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid)))
                }
            }
        switch configuration.listener {
        case .fileDescriptor(let descriptor):
            return try await bootstrap.withBoundSocket(descriptor).get()
        case .path(let path):
            var groupID: gid_t?
            if let name = configuration.socketGroup {
                guard let gid = AccessPolicy.groupID(named: name) else { throw RPCServerError.groupNotFound(name) }
                groupID = gid
            }
            let listener = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
            // Until chmod runs the file has the umask's mode (0755 with the usual 022), which
            // lets only the owner connect, so the window grants nobody extra access.
            if let groupID, chown(path, uid_t.max, groupID) != 0 {
                let code = errno
                try? await listener.close()
                throw RPCServerError.system("set the group of", path: path, errno: code)
            }
            if chmod(path, mode_t(configuration.socketMode)) != 0 {
                let code = errno
                try? await listener.close()
                throw RPCServerError.system("set the mode of", path: path, errno: code)
            }
            return listener
        }
    }

    // MARK: Registry

    func register(_ channel: any Channel, cancelCalls: @escaping @Sendable () -> Void) -> (id: UInt64, shuttingDown: Bool) {
        state.withLockedValue { state in
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            state.connections[id] = Registered(channel: channel, cancelCalls: cancelCalls)
            return (id, state.shuttingDown)
        }
    }

    func unregister(_ id: UInt64) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.connections.removeValue(forKey: id)
            guard state.connections.isEmpty else { return [] }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
