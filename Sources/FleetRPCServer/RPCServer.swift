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
/// `bind()` creates the socket (errors surface at start, before the daemon reports ready);
/// `run()` serves until graceful shutdown (SIGTERM through a `ServiceGroup`, or
/// ``triggerGracefulShutdown()``): it stops accepting, stops reading new calls, gives calls in
/// flight ``RPCServerConfiguration/shutdownGracePeriod``, then cancels them and closes.
public final class RPCServer: Service, Sendable {
    typealias Listener = NIOAsyncChannel<AcceptedConnection, Never>

    struct AcceptedConnection: Sendable {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        let credentials: PeerCredentials
    }

    private struct State {
        var listener: Listener?
        var bound = false
        var shuttingDown = false
        var connections: [UInt64: any Channel] = [:]
        var nextConnectionID: UInt64 = 1
        /// Accepted connections not yet served. NIO traps if a wrapped channel is dropped
        /// unused (as happens to connections accepted while shutting down), so each is held
        /// here until served or, at the end of `run()`, closed properly.
        var unserved: [ObjectIdentifier: NIOAsyncChannel<ByteBuffer, ByteBuffer>] = [:]
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

    /// Connections open now.
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
        guard let listener = state.withLockedValue({ $0.listener }) else {
            throw RPCServerError("The server's socket is already being served by another run().")
        }
        state.withLockedValue { $0.listener = nil }
        logger.info("Serving JSON-RPC", metadata: ["rpc.socket": "\(configuration.listener)"])
        try await withGracefulShutdownHandler {
            try await serve(listener)
        } onGracefulShutdown: {
            self.triggerGracefulShutdown()
        }
        if case .path(let path) = configuration.listener {
            unlink(path)
        }
        logger.info("JSON-RPC server stopped")
    }

    /// Begins graceful shutdown: stop accepting and reading new calls; calls in flight finish
    /// (within the grace period) and their replies are sent.
    public func triggerGracefulShutdown() {
        let channels = state.withLockedValue { state -> [any Channel] in
            guard !state.shuttingDown else { return [] }
            state.shuttingDown = true
            return Array(state.connections.values)
        }
        shutdownSignal.continuation.yield()
        for channel in channels {
            channel.close(mode: .input, promise: nil)
        }
    }

    private func serve(_ listener: Listener) async throws {
        try await withThrowingTaskGroup(of: Void.self) { outer in
            outer.addTask {
                try await withThrowingDiscardingTaskGroup { connections in
                    try await listener.executeThenClose { inbound in
                        for try await accepted in inbound {
                            connections.addTask { await self.serveConnection(accepted) }
                        }
                    }
                }
            }
            outer.addTask {
                for await _ in self.shutdownSignal.stream { break }
                listener.channel.close(promise: nil)
                try await Task.sleep(for: self.configuration.shutdownGracePeriod)
                self.logger.warning("Calls still in flight after the shutdown grace period are cancelled")
            }
            defer { outer.cancelAll() }
            _ = try await outer.next()
        }
        let leftovers = state.withLockedValue { state in
            defer { state.unserved = [:] }
            return Array(state.unserved.values)
        }
        for channel in leftovers {
            try? await channel.executeThenClose { _, _ in }
        }
    }

    /// Claims an accepted connection for serving; `false` if it was already closed by shutdown.
    func claim(_ accepted: AcceptedConnection) -> Bool {
        state.withLockedValue { $0.unserved.removeValue(forKey: ObjectIdentifier(accepted.channel.channel)) != nil }
    }

    // MARK: Listening socket

    private func makeListener() async throws -> Listener {
        let maxFrame = configuration.maxFrameBytes
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: configuration.backlog)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<AcceptedConnection> = { [state] channel in
            guard let provider = channel as? any SocketOptionProvider else {
                return channel.eventLoop.makeFailedFuture(RPCServerError("The connection has no socket options."))
            }
            let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
            return credentials.flatMapThrowing { cred in
                try channel.pipeline.syncOperations.addHandler(
                    ByteToMessageHandler(NewlineFrameDecoder(maximumFrameBytes: maxFrame)))
                let asyncChannel = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                    wrappingChannelSynchronously: channel,
                    configuration: .init(inboundType: ByteBuffer.self, outboundType: ByteBuffer.self))
                state.withLockedValue { $0.unserved[ObjectIdentifier(channel)] = asyncChannel }
                return AcceptedConnection(
                    channel: asyncChannel, credentials: PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid))
            }
        }
        switch configuration.listener {
        case .fileDescriptor(let descriptor):
            return try await bootstrap.bind(descriptor, childChannelInitializer: initializer)
        case .path(let path):
            var groupID: gid_t?
            if let name = configuration.socketGroup {
                guard let gid = AccessPolicy.groupID(named: name) else { throw RPCServerError.groupNotFound(name) }
                groupID = gid
            }
            let listener = try await bootstrap.bind(
                unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: initializer)
            // Until chmod runs the file has the umask's mode (0755 with the usual 022), which
            // lets only the owner connect, so the window grants nobody extra access.
            if let groupID, chown(path, uid_t.max, groupID) != 0 {
                let code = errno
                try? await listener.channel.close()
                throw RPCServerError.system("set the group of", path: path, errno: code)
            }
            if chmod(path, mode_t(configuration.socketMode)) != 0 {
                let code = errno
                try? await listener.channel.close()
                throw RPCServerError.system("set the mode of", path: path, errno: code)
            }
            return listener
        }
    }

    // MARK: Registry

    func register(_ channel: any Channel) -> (id: UInt64, shuttingDown: Bool) {
        state.withLockedValue { state in
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            state.connections[id] = channel
            return (id, state.shuttingDown)
        }
    }

    func unregister(_ id: UInt64) {
        _ = state.withLockedValue { $0.connections.removeValue(forKey: id) }
    }
}
