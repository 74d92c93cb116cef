import FleetRPC
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Serves one connection on its event loop: each frame is parsed where it is read; what can
/// be answered at once (`daemon.status`, errors, refusals) is answered right there, with no
/// hand-off to another thread; other calls run as tasks and write their replies when done.
///
/// Limits: at most `maxCallsInFlightPerConnection` running calls (more are refused as busy),
/// and at most `maxQueuedFramesPerConnection` frames written but not yet taken by the client
/// (``RPCOutbox``): a client that does not read is disconnected, not buffered forever.
/// When input ends (the client half-closed, or the server is shutting down), calls in
/// flight finish, their replies are written, then the connection closes.
final class RPCConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let server: RPCServer
    private let credentials: PeerCredentials
    private var logger: Logger
    private var connection: RPCConnection?
    private var outbox: RPCOutbox?
    private var registration: UInt64?
    private var calls: [UInt64: Task<Void, Never>] = [:]
    private var nextCall: UInt64 = 0
    private var inputEnded = false
    private var closing = false
    private var inactive = false

    init(server: RPCServer, credentials: PeerCredentials) {
        self.server = server
        self.credentials = credentials
        self.logger = server.logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // Normally added before the channel is active; if not, serve from now on.
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard registration == nil, connection == nil else { return }
        let channel = context.channel
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        let (id, shuttingDown) = server.register(channel) { eventLoop.execute { loopBound.value.cancelCalls() } }
        registration = id
        logger[metadataKey: "client.uid"] = "\(credentials.uid)"
        logger[metadataKey: "client.pid"] = "\(credentials.pid)"
        logger[metadataKey: "rpc.connection"] = "\(id)"
        let outbox = RPCOutbox(channel: channel, limit: server.configuration.maxQueuedFramesPerConnection, logger: logger)
        self.outbox = outbox
        connection = RPCConnection(id: id, credentials: credentials) { outbox.send($0) }
        logger.debug("Client connected")
        if shuttingDown { channel.close(mode: .input, promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !inputEnded, let connection, let outbox else { return }
        let frame = unwrapInboundIn(data)
        let dispatcher = server.dispatcher
        switch dispatcher.prepare(frame: frame.readableBytesView, connection: connection) {
        case .reply(let reply):
            if let reply { outbox.send(reply) }
        case .work(let work):
            let limit = server.configuration.maxCallsInFlightPerConnection
            guard calls.count < limit else {
                let busy = RPCError(
                    .busy,
                    "Busy: this connection already has \(limit) calls in flight; wait for replies or use another connection.")
                if let reply = dispatcher.refuse(work, with: busy) { outbox.send(reply) }
                return
            }
            nextCall &+= 1
            let id = nextCall
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            // The task's end is handled on the loop after this method returns, so the entry
            // is always in `calls` by then.
            calls[id] = Task {
                if let reply = await dispatcher.perform(work, connection: connection) { outbox.send(reply) }
                eventLoop.execute { loopBound.value.callEnded(id) }
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            endInput(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NewlineFrameDecoder.FrameTooLarge {
            logger.notice("Frame too large; closing the connection", metadata: ["rpc.limit": "\(error.limit)"])
            let reply = RPCResponse(
                id: .null,
                error: RPCError(
                    .frameTooLarge,
                    "Frame too large: a request may be at most \(error.limit) bytes; the connection is closed."))
            outbox?.send(reply.serialized())
            endInput(context: context)
        } else {
            logger.debug("Connection failed", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        inactive = true
        inputEnded = true
        connection?.markClosed()
        logger.debug("Client disconnected")
        // Calls in flight finish (a half-done LED write is not abandoned); their replies
        // have nowhere to go. The server forgets the connection once they have.
        unregisterIfDone()
        context.fireChannelInactive()
    }

    /// No more calls are read; the connection closes once the calls in flight are answered.
    private func endInput(context: ChannelHandlerContext) {
        inputEnded = true
        closeIfDone()
    }

    private func callEnded(_ id: UInt64) {
        calls[id] = nil
        closeIfDone()
        unregisterIfDone()
    }

    /// Cancels the calls in flight (end of the shutdown grace period): each is answered
    /// "shutting down" by the dispatcher.
    private func cancelCalls() {
        for task in calls.values { task.cancel() }
    }

    private func closeIfDone() {
        guard inputEnded, calls.isEmpty, !closing, !inactive, let outbox else { return }
        closing = true
        outbox.closeWhenWritten()
    }

    private func unregisterIfDone() {
        guard inactive, calls.isEmpty, let id = registration else { return }
        registration = nil
        server.unregister(id)
    }
}

/// Replies and notifications of one connection, written from any thread, bounded: frames
/// written but not yet taken by the client count against `limit`, and a client that lets
/// them pile up past it is disconnected.
final class RPCOutbox: Sendable {
    private let channel: any Channel
    private let limit: Int
    private let logger: Logger
    private let pending = NIOLockedValueBox(0)

    init(channel: any Channel, limit: Int, logger: Logger) {
        self.channel = channel
        self.limit = limit
        self.logger = logger
    }

    /// Queues one frame (a newline is added). False when the connection is closed or the
    /// client is too slow (it is then disconnected).
    @discardableResult
    func send(_ frame: [UInt8]) -> Bool {
        let admitted = pending.withLockedValue { pending -> Bool? in
            guard pending >= 0 else { return nil }  // closed
            guard pending < limit else {
                pending = -1
                return false
            }
            pending += 1
            return true
        }
        guard let admitted else { return false }
        guard admitted else {
            logger.warning("Client does not read its replies; disconnecting it")
            channel.close(promise: nil)
            return false
        }
        var buffer = channel.allocator.buffer(capacity: frame.count + 1)
        buffer.writeBytes(frame)
        buffer.writeInteger(UInt8(ascii: "\n"))
        let promise = channel.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { [pending] result in
            pending.withLockedValue { pending in
                if case .failure = result {
                    pending = -1
                } else if pending > 0 {
                    pending -= 1
                }
            }
        }
        channel.writeAndFlush(buffer, promise: promise)
        return true
    }

    /// Closes the connection once every frame queued so far is written.
    func closeWhenWritten() {
        let channel = self.channel
        channel.writeAndFlush(channel.allocator.buffer(capacity: 0)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
