import FleetRPC
import JSONRPC
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras

/// Serves one connection: reads its frames (one JSON text per line, each at most
/// ``RPCServerConfiguration/maxFrameBytes``), runs each frame's calls as a child task within
/// the connection's ``CallAdmission`` and the server's ``CallQuota`` (a batch's items each
/// count as a call), writes each reply as its call ends, and writes the handlers'
/// notifications through a bounded queue. A peer with no role is told so as it connects and
/// closed; one that holds nothing and stays silent for the idle timeout is closed. It never
/// throws: a failing connection is logged and closed, and the server goes on.
struct RPCConnectionHandler: Sendable {
    let dispatcher: JSONRPCDispatcher
    let configuration: RPCServerConfiguration
    /// The calls in flight on every connection, per user and in all (shared by all connections).
    let quota: NIOLockedValueBox<CallQuota>
    /// Calls refused as busy and peers refused for having no role, logged once a minute per user.
    private let refusedCalls = ThrottledNotes()
    private let refusedPeers = ThrottledNotes()

    init(dispatcher: JSONRPCDispatcher, configuration: RPCServerConfiguration) {
        self.dispatcher = dispatcher
        self.configuration = configuration
        self.quota = NIOLockedValueBox(
            CallQuota(
                perUserLimit: configuration.maxCallsInFlightPerUser, totalLimit: configuration.maxCallsInFlight,
                reservedForControl: configuration.reservedControlCalls))
    }

    /// Calls in flight now, everyone's together.
    var callsInFlight: Int { quota.withLockedValue { $0.inFlight } }

    /// Frames a new connection's input by lines, and reads each frame (answering at once what
    /// needs no waiting: ``ImmediateCalls``). Twice the frame limit is buffered at most: a
    /// frame is refused by its length, and a line that never ends by the buffer's limit.
    static func addFrameHandlers(
        to pipeline: ChannelPipeline.SynchronousOperations, dispatcher: JSONRPCDispatcher, credentials: PeerCredentials,
        maxFrameBytes: Int, activity: NIOLockedValueBox<IdleClock>? = nil
    ) throws {
        try pipeline.addHandler(ByteToMessageHandler(LineBasedFrameDecoder(), maximumBufferSize: 2 * maxFrameBytes + 2))
        try pipeline.addHandler(
            ImmediateCalls(dispatcher: dispatcher, credentials: credentials, maxFrameBytes: maxFrameBytes, activity: activity))
    }

    /// Serves `accepted` until its input ends (the client half-closed or left, or the server
    /// is shutting down) and every call it made has answered.
    func serve(_ accepted: AcceptedConnection, id: UInt64, logger serverLogger: Logger) async {
        var logger = serverLogger
        logger[metadataKey: "client.uid"] = "\(accepted.credentials.uid)"
        logger[metadataKey: "client.pid"] = "\(accepted.credentials.pid)"
        logger[metadataKey: "rpc.connection"] = "\(id)"
        logger.debug("Client connected")
        // Asked as the peer connects (through the policy's cache, off the event loop: it may
        // wait on NSS): a peer with no role is told so once and closed, never served.
        let role = dispatcher.policy.role(for: accepted.credentials)
        let asyncChannel = accepted.take()
        let channel = asyncChannel.channel
        do {
            try await asyncChannel.executeThenClose { [logger] inbound, outbound in
                if role == .none {
                    try await refuseStranger(accepted.credentials, inbound: inbound, outbound: outbound, logger: logger)
                    return
                }
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
                    let admission = NIOLockedValueBox(CallAdmission(limit: configuration.maxCallsInFlightPerConnection))
                    await withTaskGroup(of: Void.self) { watch in
                        if let activity = accepted.activity {
                            watch.addTask {
                                await closeWhenIdle(connection, activity: activity, admission: admission, logger: logger) {
                                    channel.close(promise: nil)
                                }
                            }
                        }
                        await read(
                            inbound, outbound: outbound, connection: connection, admission: admission,
                            activity: accepted.activity, logger: logger
                        ) {
                            channel.close(promise: nil)
                        }
                        watch.cancelAll()
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
        connection: RPCConnection, admission: NIOLockedValueBox<CallAdmission>, activity: NIOLockedValueBox<IdleClock>?,
        logger: Logger, close: @escaping @Sendable () -> Void
    ) async {
        let maxFrame = configuration.maxFrameBytes
        let maxBatch = configuration.maxBatchCalls
        let dispatcher = self.dispatcher
        let quota = self.quota
        let uid = connection.credentials.uid
        await withDiscardingTaskGroup { calls in
            // Input over: what the connection keeps only while open (a connect for a lease)
            // stops now, not once every call has answered (the group waits for those).
            defer { connection.markInputEnded() }
            func dispatch(_ incoming: RPCIncoming) {
                if case .batch(let items) = incoming, items.count > maxBatch {
                    let error = RPCError.invalidRequest(
                        "a batch may hold at most \(maxBatch) calls (max-batch-calls) and this one holds \(items.count); "
                            + "nothing of it was run, send it in parts")
                    noteRefusal(uid: uid, reason: error.message, refused: items.count, logger: logger)
                    connection.send(RPCResponse(id: .null, error: error).serialized())
                    return
                }
                // Each call counts, a batch's items each as one: first against the connection's
                // places, then against its user's and the daemon's (by its role now, through
                // the policy's cache).
                let wanted = incoming.callCount
                var decision = admission.withLockedValue { $0.admit(wanted) }
                if decision.admitted > 0 {
                    let role = dispatcher.policy.role(for: connection.credentials)
                    let shared = quota.withLockedValue { $0.take(decision.admitted, uid: uid, role: role) }
                    if shared.admitted < decision.admitted {
                        admission.withLockedValue { $0.finished(decision.admitted - shared.admitted) }
                        decision = shared
                    }
                }
                if let busy = decision.refusal {
                    noteRefusal(uid: uid, reason: busy.message, refused: wanted - decision.admitted, logger: logger)
                }
                guard decision.admitted > 0 else {
                    if let busy = decision.refusal, let reply = dispatcher.refuse(incoming, with: busy) { connection.send(reply) }
                    return
                }
                let admitted = decision.admitted
                calls.addTask {
                    // The reply is written by the call: a client that does not read holds its
                    // calls' places, so its next calls are refused as busy, not buffered.
                    if let reply = await dispatcher.handle(
                        incoming, connection: connection, runningFirst: admitted, refusingTheRest: decision.refusal)
                    {
                        var buffer = ByteBuffer(bytes: reply)
                        buffer.writeInteger(UInt8(ascii: "\n"))
                        try? await outbound.write(buffer)
                    }
                    activity?.withLockedValue { $0.active(at: .now) }
                    admission.withLockedValue { $0.finished(admitted) }
                    quota.withLockedValue { $0.give(admitted, uid: uid) }
                    if dispatcher.policy.cachedRole(for: connection.credentials) == AccessRole.none { close() }
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

    /// Refuses a peer with no role as it connects: one line saying why (`-32000`), what it
    /// sent meanwhile read and dropped for a second at most (so the line is not lost to a
    /// reset), then the connection closes.
    private func refuseStranger(
        _ credentials: PeerCredentials, inbound: NIOAsyncChannelInboundStream<ReadFrame>,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, logger: Logger
    ) async throws {
        let policy = dispatcher.policy.configuration
        var message =
            "Permission denied: uid \(credentials.uid) may not use blefleetd; join the group '\(policy.controlGroup)'"
        if let readOnly = policy.readOnlyGroup { message += " (or '\(readOnly)' to read only)" }
        let error = RPCError(.permissionDenied, message + "; the connection is closed.")
        refusedPeers.note(credentials.uid) { unlogged in
            logger.notice(
                "Refused a connection: its user has no role",
                metadata: ["client.role": "none", "rpc.refusals.unlogged": "\(unlogged)"])
        }
        try await AcceptedConnection.refuse(
            inbound: inbound, outbound: outbound, with: RPCResponse(id: .null, error: error).serialized(), lingering: .seconds(1))
    }

    /// Closes `connection` (`close`) once it has been idle for the whole timeout: no call in
    /// flight, nothing held, nothing sent. Returns then, or when cancelled.
    private func closeWhenIdle(
        _ connection: RPCConnection, activity: NIOLockedValueBox<IdleClock>, admission: NIOLockedValueBox<CallAdmission>,
        logger: Logger, close: @Sendable () -> Void
    ) async {
        while !Task.isCancelled {
            let action = activity.withLockedValue {
                $0.timerFired(
                    at: .now, callsInFlight: admission.withLockedValue { $0.inFlight }, holdsSomething: connection.holdsSomething)
            }
            switch action {
            case .close:
                logger.info(
                    "Closing an idle connection: no call in flight, nothing held",
                    metadata: ["rpc.idle-timeout": "\(activity.withLockedValue { $0.timeout })"])
                close()
                return
            case .check(let instant):
                do { try await Task.sleep(until: instant, clock: .continuous) } catch { return }
            }
        }
    }

    /// Logs that `refused` calls of `uid` were refused: the first, then at most a line a minute per user.
    private func noteRefusal(uid: UInt32, reason: String, refused: Int, logger: Logger) {
        refusedCalls.note(uid) { unlogged in
            logger.notice(
                "Refused calls",
                metadata: ["rpc.error": "\(reason)", "rpc.refused": "\(refused)", "rpc.refusals.unlogged": "\(unlogged)"])
        }
    }
}
