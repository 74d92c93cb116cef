import Glibc
import NIOCore

extension PeerCredentials {
    /// Who is on the other end of a connection accepted on a Unix socket, as the kernel
    /// recorded it when the peer connected (`SO_PEERCRED`): no client can claim another uid.
    static func ofPeer(of channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(RPCServerError.noSocketOptions)
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        return credentials.map { PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) }
    }
}

/// Laid out like Linux's `struct ucred` (Glibc hides it): pid_t, uid_t, gid_t.
struct UCred: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
