import NIOCore
import Synchronization

/// A connection accepted and set up (peer credentials read, frames decoded), waiting to be
/// served. One the server never takes to serve (accepted while it drains, or still queued
/// when it stops) is closed when dropped, rather than left half-made.
final class AcceptedConnection: Sendable {
    typealias Channel = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    let credentials: PeerCredentials
    private let channel: Channel
    private let taken = Atomic(false)

    init(channel: Channel, credentials: PeerCredentials) {
        self.channel = channel
        self.credentials = credentials
    }

    /// The channel, for the one task that serves it (and closes it when done).
    func take() -> Channel {
        taken.store(true, ordering: .relaxed)
        return channel
    }

    /// Closes the connection without serving it.
    func close() {
        channel.channel.close(promise: nil)
    }

    deinit {
        if !taken.load(ordering: .relaxed) { close() }
    }
}
