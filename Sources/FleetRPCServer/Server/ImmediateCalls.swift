import JSONRPC
import NIOConcurrencyHelpers
import NIOCore

/// A frame as the connection's task gets it: read once, on the event loop.
enum ReadFrame: Sendable {
    /// A frame whose calls wait (or that could not be answered at once): run it as a task.
    case incoming(RPCIncoming)
    /// A frame over ``RPCServerConfiguration/maxFrameBytes``: answered, then the connection closes.
    case tooLarge
}

/// Reads each frame of a connection on its event loop and answers there what needs no
/// waiting (``JSONRPCDispatcher/answerAtOnce(_:credentials:)``: `daemon.status`, errors): a
/// call that only reads a snapshot costs no task and no thread hop. The rest goes on, read,
/// to the connection's task. A client that does not read its replies (the channel is not
/// writable) gets nothing more here: its frames go to the task, whose bounded admission
/// deals with it. Nothing is answered here for a peer with no role: the task refuses it
/// once, as it connects, and closes it. Every frame read makes the connection active
/// (``IdleClock``).
final class ImmediateCalls: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ReadFrame
    typealias OutboundOut = ByteBuffer

    private let dispatcher: JSONRPCDispatcher
    private let credentials: PeerCredentials
    private let maxFrameBytes: Int
    private let activity: NIOLockedValueBox<IdleClock>?

    init(
        dispatcher: JSONRPCDispatcher, credentials: PeerCredentials, maxFrameBytes: Int,
        activity: NIOLockedValueBox<IdleClock>? = nil
    ) {
        self.dispatcher = dispatcher
        self.credentials = credentials
        self.maxFrameBytes = maxFrameBytes
        self.activity = activity
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        activity?.withLockedValue { $0.active(at: .now) }
        guard frame.readableBytes <= maxFrameBytes else {
            context.fireChannelRead(wrapInboundOut(.tooLarge))
            return
        }
        let bytes = frame.readableBytesView
        guard !bytes.allSatisfy(Self.isWhitespace) else { return }
        let incoming = RPCIncoming(parsing: bytes)
        guard context.channel.isWritable, dispatcher.policy.cachedRole(for: credentials) != AccessRole.none,
            case .answered(let reply) = dispatcher.answerAtOnce(incoming, credentials: credentials)
        else {
            context.fireChannelRead(wrapInboundOut(.incoming(incoming)))
            return
        }
        guard let reply else { return }
        var buffer = context.channel.allocator.buffer(capacity: reply.count + 1)
        buffer.writeBytes(reply)
        buffer.writeInteger(UInt8(ascii: "\n"))
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }
}
