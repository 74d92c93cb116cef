import NIOCore

extension RPCServer {
    /// Waits until every connection has closed, for `limit` at most; whether they all did.
    /// Shutdown has begun: connections read no new calls (``QuiesceInput``) and close once
    /// their calls in flight have answered.
    func drained(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { waiter in
                    if case .resume = self.state.withLock({ $0.waitForDrain(waiter) }) { waiter.resume() }
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let drained = await group.next() ?? false
            group.cancelAll()
            if !drained {
                // Ends the waiting child; one that had not begun to wait will not.
                for waiter in state.withLock({ $0.gracePeriodEnded() }) { waiter.resume() }
            }
            await group.waitForAll()
            return drained
        }
    }
}

/// Stops reading a connection when the server quiesces: calls in flight still answer, then
/// the connection closes. A connection told before it is active stops as soon as it is.
final class QuiesceInput: ChannelInboundHandler {
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
