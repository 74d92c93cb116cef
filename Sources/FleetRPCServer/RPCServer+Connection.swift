import FleetRPC
import Logging
import NIOConcurrencyHelpers
import NIOCore

extension RPCServer {
    /// Counts calls in flight on one connection and knows when output can end.
    private struct CallCounter {
        var inFlight = 0
        var inputEnded = false
    }

    /// Serves one connection until the client closes it, it misbehaves, or shutdown. Never
    /// throws: every problem is answered (when possible) and logged.
    func serveConnection(_ accepted: AcceptedConnection) async {
        guard claim(accepted) else { return }
        let channel = accepted.channel.channel
        let (id, shuttingDown) = register(channel)
        defer { unregister(id) }
        var connectionLogger = self.logger
        connectionLogger[metadataKey: "client.uid"] = "\(accepted.credentials.uid)"
        connectionLogger[metadataKey: "client.pid"] = "\(accepted.credentials.pid)"
        connectionLogger[metadataKey: "rpc.connection"] = "\(id)"
        let logger = connectionLogger
        logger.debug("Client connected")
        if shuttingDown { channel.close(mode: .input, promise: nil) }

        let configuration = self.configuration
        let dispatcher = self.dispatcher
        let output = AsyncStream<[UInt8]>.makeStream(
            bufferingPolicy: .bufferingOldest(configuration.maxQueuedFramesPerConnection))
        let connection = RPCConnection(id: id, credentials: accepted.credentials) { frame in
            switch output.continuation.yield(frame) {
            case .enqueued: return true
            case .terminated: return false
            case .dropped:
                logger.warning("Client does not read its replies; disconnecting it")
                output.continuation.finish()
                channel.close(promise: nil)
                return false
            @unknown default: return false
            }
        }
        let counter = NIOLockedValueBox(CallCounter())
        @Sendable func callEnded() {
            let finished = counter.withLockedValue { counter -> Bool in
                counter.inFlight -= 1
                return counter.inputEnded && counter.inFlight == 0
            }
            if finished { output.continuation.finish() }
        }

        do {
            try await accepted.channel.executeThenClose { inbound, outbound in
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask {
                        do {
                            for await frame in output.stream {
                                var buffer = ByteBuffer(bytes: frame)
                                buffer.writeInteger(UInt8(ascii: "\n"))
                                try await outbound.write(buffer)
                            }
                        } catch {
                            logger.debug("Client stopped reading", metadata: ["error": "\(error)"])
                            output.continuation.finish()
                            channel.close(promise: nil)
                        }
                    }
                    do {
                        for try await frame in inbound {
                            let admitted = counter.withLockedValue { counter -> Bool in
                                guard counter.inFlight < configuration.maxCallsInFlightPerConnection else { return false }
                                counter.inFlight += 1
                                return true
                            }
                            let bytes = Array(frame.readableBytesView)
                            guard admitted else {
                                let busy = RPCError(
                                    .busy,
                                    "Busy: this connection already has \(configuration.maxCallsInFlightPerConnection) calls in flight; wait for replies or use another connection.")
                                if let reply = dispatcher.refuse(frame: bytes, with: busy) { _ = connection.send(reply) }
                                continue
                            }
                            group.addTask {
                                if let reply = await dispatcher.handle(frame: bytes, connection: connection) {
                                    _ = connection.send(reply)
                                }
                                callEnded()
                            }
                        }
                    } catch let error as NewlineFrameDecoder.FrameTooLarge {
                        logger.notice("Frame too large; closing the connection", metadata: ["rpc.limit": "\(error.limit)"])
                        let reply = RPCResponse(
                            id: .null,
                            error: RPCError(
                                .frameTooLarge,
                                "Frame too large: a request may be at most \(error.limit) bytes; the connection is closed."))
                        _ = connection.send(reply.serialized())
                    } catch {
                        logger.debug("Connection input failed", metadata: ["error": "\(error)"])
                    }
                    let finished = counter.withLockedValue { counter -> Bool in
                        counter.inputEnded = true
                        return counter.inFlight == 0
                    }
                    if finished { output.continuation.finish() }
                }
            }
        } catch {
            logger.debug("Connection ended with an error", metadata: ["error": "\(error)"])
        }
        output.continuation.finish()
        connection.markClosed()
        logger.debug("Client disconnected")
    }
}
