import FleetRPC
import Glibc
import JSONRPC
public import Logging
import NIOConcurrencyHelpers
public import NIOCore
import NIOExtras
public import NIOPosix
public import ServiceLifecycle
import Synchronization

/// The daemon's JSON-RPC 2.0 server on a Unix socket: one JSON text per line, written the
/// way NIO's async servers are: each accepted connection is an `NIOAsyncChannel` served by
/// one structured task (`LineBasedFrameDecoder` under `ByteToMessageHandler`), its calls
/// child tasks of it, bounded in number; graceful drain by `ServerQuiescingHelper`.
///
/// `bind()` creates the socket (errors surface at start, before the daemon reports ready);
/// nothing is answered until `run()`, which serves until graceful shutdown (SIGTERM through
/// a `ServiceGroup`, or ``triggerGracefulShutdown()``): it stops accepting, each connection
/// stops reading new calls, calls in flight get ``RPCServerConfiguration/shutdownGracePeriod``
/// to finish and answer, then they are cancelled.
public final class RPCServer: Service, Sendable {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    /// A connection accepted and set up, waiting to be served. One the server never gets to
    /// serve (accepted while it stops) is closed when dropped, rather than left half-made.
    final class Accepted: Sendable {
        let channel: Connection
        let credentials: PeerCredentials
        let served = Atomic(false)

        init(channel: Connection, credentials: PeerCredentials) {
            self.channel = channel
            self.credentials = credentials
        }

        deinit {
            guard !served.load(ordering: .relaxed) else { return }
            let channel = self.channel
            Task { try? await channel.executeThenClose { _, _ in } }
        }
    }

    private struct State {
        var listener: NIOAsyncChannel<Accepted, Never>?
        var quiescing: ServerQuiescingHelper?
        var bound = false
        var shuttingDown = false
        var open = 0
        var nextConnectionID: UInt64 = 1
        /// Waiting in `run()` for the last connection to go (after shutdown began).
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    public let configuration: RPCServerConfiguration
    let dispatcher: JSONRPCDispatcher
    let logger: Logger
    private let group: any EventLoopGroup
    private let state = NIOLockedValueBox(State())

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
    public var connectionCount: Int { state.withLockedValue { $0.open } }

    /// Creates the listening socket (file mode and group set) unless already done.
    public func bind() async throws {
        guard
            state.withLockedValue({ state in
                defer { state.bound = true }
                return !state.bound
            })
        else { return }
        do {
            let quiescing = ServerQuiescingHelper(group: group)
            let listener = try await makeListener(quiescing)
            state.withLockedValue {
                $0.listener = listener
                $0.quiescing = quiescing
            }
        } catch {
            state.withLockedValue { $0.bound = false }
            throw error
        }
    }

    public func run() async throws {
        try await bind()
        guard
            let listener = state.withLockedValue({ state in
                defer { state.listener = nil }
                return state.listener
            })
        else {
            throw RPCServerError("The server's socket is already being served by another run().")
        }
        logger.info("Serving JSON-RPC", metadata: ["rpc.socket": "\(configuration.listener)"])
        await withDiscardingTaskGroup { connections in
            await withGracefulShutdownHandler {
                do {
                    try await listener.executeThenClose { inbound in
                        for try await accepted in inbound {
                            connections.addTask { await self.serve(accepted) }
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
            if case .path(let path) = configuration.listener {
                unlink(path)
            }
            if await !drained(within: configuration.shutdownGracePeriod) {
                logger.warning("Calls still in flight after the shutdown grace period are cancelled")
                connections.cancelAll()
            }
        }
        logger.info("JSON-RPC server stopped")
    }

    /// Begins graceful shutdown: stop accepting, and each connection stops reading new calls;
    /// calls in flight finish (within the grace period) and their replies are sent.
    public func triggerGracefulShutdown() {
        let quiescing = state.withLockedValue { state -> ServerQuiescingHelper? in
            guard !state.shuttingDown else { return nil }
            state.shuttingDown = true
            return state.quiescing
        }
        quiescing?.initiateShutdown(promise: nil)
    }

    // MARK: One connection

    private func serve(_ accepted: Accepted) async {
        let id = opened()
        defer { closed() }
        var connectionLogger = self.logger
        connectionLogger[metadataKey: "client.uid"] = "\(accepted.credentials.uid)"
        connectionLogger[metadataKey: "client.pid"] = "\(accepted.credentials.pid)"
        connectionLogger[metadataKey: "rpc.connection"] = "\(id)"
        let logger = connectionLogger
        logger.debug("Client connected")
        let channel = accepted.channel.channel
        accepted.served.store(true, ordering: .relaxed)
        do {
            try await accepted.channel.executeThenClose { inbound, outbound in
                // Notifications (and refusals), written in order by one task. Bounded: a client
                // that lets `maxQueuedFramesPerConnection` of them pile up is disconnected.
                // Replies are written by their calls, whose number is bounded.
                let (frames, queue) = AsyncStream<ByteBuffer>.makeStream(
                    bufferingPolicy: .bufferingOldest(configuration.maxQueuedFramesPerConnection))
                let connection = RPCConnection(id: id, credentials: accepted.credentials) { bytes in
                    var frame = channel.allocator.buffer(capacity: bytes.count + 1)
                    frame.writeBytes(bytes)
                    frame.writeInteger(UInt8(ascii: "\n"))
                    switch queue.yield(frame) {
                    case .enqueued: return true
                    case .dropped:
                        logger.warning("Client does not read its replies; disconnecting it")
                        channel.close(promise: nil)
                        return false
                    case .terminated: return false
                    @unknown default: return false
                    }
                }
                await withDiscardingTaskGroup { tasks in
                    tasks.addTask {
                        for await frame in frames {
                            do {
                                try await outbound.write(frame)
                            } catch {
                                break
                            }
                        }
                        connection.markClosed()
                    }
                    await read(inbound, outbound: outbound, connection: connection, logger: logger)
                    // Every call has answered: nothing more will be queued.
                    queue.finish()
                }
            }
        } catch {
            logger.debug("Connection failed", metadata: ["error": "\(error)"])
        }
        logger.debug("Client disconnected")
    }

    /// Reads calls until input ends (the client half-closed or left, or the server is
    /// shutting down), each run as a child task; returns once every call has answered.
    private func read(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        connection: RPCConnection, logger: Logger
    ) async {
        let limit = configuration.maxCallsInFlightPerConnection
        let maxFrame = configuration.maxFrameBytes
        let inFlight = NIOLockedValueBox(0)
        let dispatcher = self.dispatcher
        await withDiscardingTaskGroup { calls in
            func dispatch(_ frame: ByteBuffer) {
                let bytes = frame.readableBytesView
                guard !bytes.allSatisfy(Self.isWhitespace) else { return }
                let admitted = inFlight.withLockedValue { count in
                    guard count < limit else { return false }
                    count += 1
                    return true
                }
                guard admitted else {
                    let busy = RPCError(
                        .busy,
                        "Busy: this connection already has \(limit) calls in flight; wait for replies or use another connection.")
                    if let reply = dispatcher.refuse(frame: bytes, with: busy) { connection.send(reply) }
                    return
                }
                calls.addTask {
                    // The reply is written by the call: a client that does not read holds its
                    // call's slot, so its next calls are refused as busy, not buffered.
                    if let reply = await dispatcher.handle(frame: bytes, connection: connection) {
                        var buffer = ByteBuffer(bytes: reply)
                        buffer.writeInteger(UInt8(ascii: "\n"))
                        try? await outbound.write(buffer)
                    }
                    inFlight.withLockedValue { $0 -= 1 }
                }
            }
            func tooLarge() {
                logger.notice("Frame too large; closing the connection", metadata: ["rpc.limit": "\(maxFrame)"])
                let error = RPCError(
                    .frameTooLarge, "Frame too large: a request may be at most \(maxFrame) bytes; the connection is closed.")
                connection.send(RPCResponse(id: .null, error: error).serialized())
            }
            do {
                for try await frame in inbound {
                    guard frame.readableBytes <= maxFrame else {
                        tooLarge()
                        return
                    }
                    dispatch(frame)
                }
            } catch let leftover as NIOExtrasErrors.LeftOverBytesError {
                // The client half-closed without a final newline: its last bytes are a frame.
                dispatch(leftover.leftOverBytes)
            } catch is ByteToMessageDecoderError.PayloadTooLargeError {
                tooLarge()
            } catch {
                logger.debug("Reading failed", metadata: ["error": "\(error)"])
            }
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }

    // MARK: Listening socket

    private func makeListener(_ quiescing: ServerQuiescingHelper) async throws -> NIOAsyncChannel<Accepted, Never> {
        let maxFrame = configuration.maxFrameBytes
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: configuration.backlog)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Accepted> = { channel in
            guard let provider = channel as? any SocketOptionProvider else {
                return channel.eventLoop.makeFailedFuture(RPCServerError("The connection has no socket options."))
            }
            let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
            return credentials.flatMapThrowing { cred in
                let pipeline = channel.pipeline.syncOperations
                try pipeline.addHandler(QuiesceInput())
                // Twice the frame limit buffered at most: a frame is refused by length, and a
                // line that never ends by the buffer's limit.
                try pipeline.addHandler(ByteToMessageHandler(LineBasedFrameDecoder(), maximumBufferSize: 2 * maxFrame + 2))
                let connection = try Connection(
                    wrappingChannelSynchronously: channel,
                    configuration: .init(isOutboundHalfClosureEnabled: false))
                return Accepted(channel: connection, credentials: PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid))
            }
        }
        switch configuration.listener {
        case .fileDescriptor(let descriptor):
            return try await bootstrap.bind(NIOBSDSocket.Handle(descriptor), childChannelInitializer: initializer)
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

    // MARK: Connections open

    private func opened() -> UInt64 {
        state.withLockedValue { state in
            state.open += 1
            defer { state.nextConnectionID += 1 }
            return state.nextConnectionID
        }
    }

    private func closed() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.open -= 1
            guard state.open == 0 else { return [] }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether every connection went within `limit`.
    private func drained(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let now = self.state.withLockedValue { state -> Bool in
                        guard state.open > 0 else { return true }
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
            if !first {  // ends the waiting child
                let waiters = state.withLockedValue { state in
                    defer { state.drainWaiters = [] }
                    return state.drainWaiters
                }
                for waiter in waiters { waiter.resume() }
            }
            await group.waitForAll()
            return first
        }
    }
}

/// Stops reading a connection when the server quiesces: calls in flight still answer, then
/// the connection closes. A connection told before it is active stops as soon as it is.
private final class QuiesceInput: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var quiescing = false

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        if quiescing { context.close(mode: .input, promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !quiescing {
            quiescing = true
            if context.channel.isActive { context.close(mode: .input, promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }
}
