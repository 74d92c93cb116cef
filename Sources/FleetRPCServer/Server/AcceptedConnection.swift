import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// A connection accepted and set up (peer credentials read, frames decoded), waiting to be
/// served. One the server never takes to serve (accepted while it drains, or still queued
/// when it stops) is closed when dropped, rather than left half-made: through
/// `executeThenClose`, as the served ones are, because an `NIOAsyncChannel` whose writer is
/// dropped unfinished stops the process.
final class AcceptedConnection: Sendable {
    typealias Channel = NIOAsyncChannel<ReadFrame, ByteBuffer>

    let credentials: PeerCredentials
    /// When the connection was last active (frames read as they are read, replies written),
    /// for its idle timeout; `nil` when the server has none.
    let activity: NIOLockedValueBox<IdleClock>?
    private let channel: Channel
    /// Taken to serve, or closed: either way, dropping it does nothing more.
    private let taken = Atomic(false)

    init(channel: Channel, credentials: PeerCredentials, activity: NIOLockedValueBox<IdleClock>? = nil) {
        self.channel = channel
        self.credentials = credentials
        self.activity = activity
    }

    /// The channel, for the one task that serves it (and closes it when done).
    func take() -> Channel {
        taken.store(true, ordering: .relaxed)
        return channel
    }

    /// Writes `frame` (one line) and closes the connection without serving it. What the client
    /// sent meanwhile is read and dropped first, for `lingering` at most: a Unix socket closed
    /// with unread data resets the connection, and the client would lose the line. `done`
    /// runs once the connection is closed.
    func refuse(with frame: [UInt8], lingering: Duration = .seconds(1), done: @escaping @Sendable () -> Void = {}) {
        guard !taken.exchange(true, ordering: .relaxed) else { return done() }
        Task { [channel] in
            try? await channel.executeThenClose { inbound, outbound in
                try await Self.refuse(inbound: inbound, outbound: outbound, with: frame, lingering: lingering)
            }
            done()
        }
    }

    /// Writes `frame` (one line), then reads and drops the client's input until it ends or
    /// `lingering` has passed; the caller closes the connection.
    static func refuse(
        inbound: NIOAsyncChannelInboundStream<ReadFrame>, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        with frame: [UInt8], lingering: Duration
    ) async throws {
        var buffer = ByteBuffer(bytes: frame)
        buffer.writeInteger(UInt8(ascii: "\n"))
        try await outbound.write(buffer)
        guard lingering > .zero else { return }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for try await _ in inbound {} }
            group.addTask { try await Task.sleep(for: lingering) }
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// Closes the connection without serving it.
    func close() {
        guard !taken.exchange(true, ordering: .relaxed) else { return }
        Self.close(channel)
    }

    deinit {
        if !taken.load(ordering: .relaxed) { Self.close(channel) }
    }

    private static func close(_ channel: Channel) {
        Task { try? await channel.executeThenClose { _, _ in } }
    }
}
