import Glibc
import NIOCore

extension PeerCredentials {
    /// Who is on the other end of a connection accepted on a Unix socket, as the kernel
    /// recorded it when the peer connected (`SO_PEERCRED`, `SO_PEERGROUPS`): no client can
    /// claim another uid or group. A peer whose groups cannot be read (more than
    /// ``PeerGroups/capacity``) is judged by its uid and gid alone.
    static func ofPeer(of channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(RPCServerError.noSocketOptions)
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        let groups: EventLoopFuture<PeerGroups> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERGROUPS))
        return credentials.flatMap { credentials in
            groups.map(\.gids).recover { _ in [] }.map {
                PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, groups: $0)
            }
        }
    }
}

/// Laid out like Linux's `struct ucred` (Glibc hides it): pid_t, uid_t, gid_t.
struct UCred: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// The buffer `SO_PEERGROUPS` fills: up to ``capacity`` gid_t, the rest left as NIO zeroed it
/// (NIO's getsockopt does not hand back the length the kernel wrote).
struct PeerGroups: Sendable {
    static let capacity = 256
    var storage = InlineArray<256, UInt32>(repeating: 0)

    /// The groups the kernel wrote. It keeps a process's groups sorted (it searches them by
    /// bisection), so they are the ascending run at the front; the zeros after it are the
    /// buffer's. All zeros is "no supplementary group" (a lone group 0 reads the same, and is
    /// left out: it can only grant less than it should, never more).
    var gids: [UInt32] {
        var found: [UInt32] = []
        for index in storage.indices {
            let gid = storage[index]
            if let last = found.last, gid < last { break }
            found.append(gid)
        }
        while found.last == 0 { found.removeLast() }
        return found
    }
}
