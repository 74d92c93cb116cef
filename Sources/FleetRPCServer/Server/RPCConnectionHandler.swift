import FleetRPC
import JSONRPC
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras

/// Serves one connection: reads its frames (one JSON text per line, each at most
/// ``RPCServerConfiguration/maxFrameBytes``), runs each frame's calls as a child task within
/// the connection's ``CallAdmission``, writes each reply as its call ends, and writes the
/// handlers' notifications through a bounded queue. It never throws: a failing connection is
/// logged and closed, and the server goes on.
struct RPCConnectionHandler: Sendable {
    let dispatcher: JSONRPCDispatcher
    let configuration: RPCServerConfiguration

    /// Frames a new connection's input by lines, and reads each frame (answering at once what
    /// needs no waiting: ``ImmediateCalls``). Twice the frame limit is buffered at most: a
    /// frame is refused by its length, and a line that never ends by the buffer's limit.
    static func addFrameHandlers(
        to pipeline: ChannelPipeline.SynchronousOperations, dispatcher: JSONRPCDispatcher, credentials: PeerCredentials,
        maxFrameBytes: Int
    ) throws {
        try pipeline.addHandler(ByteToMessageHandler(LineBasedFrameDecoder(), maximumBufferSize: 2 * maxFrameBytes + 2))
        try pipeline.addHandler(ImmediateCalls(dispatcher: dispatcher, credentials: credentials, maxFrameBytes: maxFrameBytes))
    }

    /// Serves `accepted` until its input ends (the client half-closed or left, or the server
    /// is shutting down) and every call it made has answered.
    func serve(_ accepted: AcceptedConnection, id: UInt64, logger serverLogger: Logger) async {
        var logger = serverLogger
        logger[metadataKey: "client.uid"] = "\(accepted.credentials.uid)"
        logger[metadataKey: "client.pid"] = "\(accepted.credentials.pid)"
        logger[metadataKey: "rpc.connection"] = "\(id)"
        logger.debug("Client connected")
        let asyncChannel = accepted.take()
        let channel = asyncChannel.channel
        do {
            try await asyncChannel.executeThenClose { [logger] inbound, outbound in
                // Notifications (and refusals), written in order by one task. Bounded: a client
                // that lets `maxQueuedFramesPerConnection` of them pile up is disconnected.
                // Replies are written by their calls, whose number is bounded.
                let (frames, queue) = AsyncStream<ByteBuffer>.makeStream(
                    bufferingPolicy: .bufferingOldest(configuration.maxQueuedFramesPerConnection))
                let connection = RPCConnection(
                    id: id, credentials: accepted.credentials, queueLimit: configuration.maxQueuedFramesPerConnection
                ) { bytes in
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
                            connection.frameWritten()
                        }
                        connection.markClosed()
                    }
                    await read(inbound, outbound: outbound, connection: connection, logger: logger) {
                        channel.close(promise: nil)
                    }
                    // Every call has answered: nothing more will be queued.
                    queue.finish()
                }
            }
        } catch {
            logger.debug("Connection failed", metadata: ["error": "\(error)"])
        }
        logger.debug("Client disconnected")
    }

    /// Reads calls until input ends, each frame run as a child task; returns once every call
    /// has answered.
    /// A peer with no role at all (in no group of the daemon's, on a socket of mode 0666) is
    /// told why once and its connection closed (`close`): it cannot hold connections open
    /// for nothing.
    private func read(
        _ inbound: NIOAsyncChannelInboundStream<ReadFrame>, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        connection: RPCConnection, logger: Logger, close: @escaping @Sendable () -> Void
    ) async {
        let maxFrame = configuration.maxFrameBytes
        let admission = NIOLockedValueBox(CallAdmission(limit: configuration.maxCallsInFlightPerConnection))
        let dispatcher = self.dispatcher
        await withDiscardingTaskGroup { calls in
            // Input over: what the connection keeps only while open (a connect for a lease)
            // stops now, not once every call has answered (the group waits for those).
            defer { connection.markInputEnded() }
            func dispatch(_ incoming: RPCIncoming) {
                switch admission.withLockedValue({ $0.admit() }) {
                case .refused(let busy):
                    if let reply = dispatcher.refuse(incoming, with: busy) { connection.send(reply) }
                case .admitted:
                    calls.addTask {
                        // The reply is written by the call: a client that does not read holds its
                        // call's place, so its next calls are refused as busy, not buffered.
                        if let reply = await dispatcher.handle(incoming, connection: connection) {
                            var buffer = ByteBuffer(bytes: reply)
                            buffer.writeInteger(UInt8(ascii: "\n"))
                            try? await outbound.write(buffer)
                        }
                        admission.withLockedValue { $0.finished() }
                        if dispatcher.policy.cachedRole(for: connection.credentials) == AccessRole.none { close() }
                    }
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
                    switch frame {
                    case .tooLarge:
                        tooLarge()
                        return
                    case .incoming(let incoming):
                        dispatch(incoming)
                    }
                }
            } catch let leftover as NIOExtrasErrors.LeftOverBytesError {
                // The client half-closed without a final newline: its last bytes are a frame.
                let bytes = leftover.leftOverBytes
                guard bytes.readableBytes <= maxFrame else { return tooLarge() }
                guard !bytes.readableBytesView.allSatisfy(ImmediateCalls.isWhitespace) else { return }
                dispatch(RPCIncoming(parsing: bytes.readableBytesView))
            } catch is ByteToMessageDecoderError.PayloadTooLargeError {
                tooLarge()
            } catch {
                logger.debug("Reading failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
