import FleetModel
import Glibc
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras
import NIOPosix

/// The server's listening socket: a Unix socket file it creates (replacing a stale one, with
/// the configured mode and group) or one it is handed ready-made (systemd socket activation),
/// and how it sets up each connection it accepts: the peer's credentials read
/// (`SO_PEERCRED`), its input framed and read (``ImmediateCalls``), and a ``QuiesceInput`` to stop it reading at shutdown.
struct RPCListener: Sendable {
    /// Accepted connections, set up.
    let channel: NIOAsyncChannel<AcceptedConnection, Never>
    /// The file this listener created, if any (a handed socket's file is not ours).
    let path: String?
    private let quiescing: ServerQuiescingHelper

    /// Creates the socket; it listens (clients wait in the backlog) but nothing is accepted
    /// until ``channel`` is read.
    static func bind(
        configuration: RPCServerConfiguration, dispatcher: JSONRPCDispatcher, group: any EventLoopGroup
    ) async throws -> RPCListener {
        let quiescing = ServerQuiescingHelper(group: group)
        let maxFrameBytes = configuration.maxFrameBytes
        let idleTimeout = configuration.idleTimeout
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: configuration.backlog)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let setUp: @Sendable (any Channel) -> EventLoopFuture<AcceptedConnection> = { channel in
            PeerCredentials.ofPeer(of: channel).flatMapThrowing { credentials in
                let pipeline = channel.pipeline.syncOperations
                let activity = idleTimeout.map { NIOLockedValueBox(IdleClock(timeout: $0, now: .now)) }
                try pipeline.addHandler(QuiesceInput())
                try RPCConnectionHandler.addFrameHandlers(
                    to: pipeline, dispatcher: dispatcher, credentials: credentials, maxFrameBytes: maxFrameBytes,
                    activity: activity)
                let connection = try AcceptedConnection.Channel(
                    wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: false))
                return AcceptedConnection(channel: connection, credentials: credentials, activity: activity)
            }
        }
        switch configuration.listener {
        case .fileDescriptor(let descriptor):
            let channel = try await bootstrap.bind(NIOBSDSocket.Handle(descriptor), childChannelInitializer: setUp)
            return RPCListener(channel: channel, path: nil, quiescing: quiescing)
        case .path(let path):
            var groupID: gid_t?
            if let name = configuration.socketGroup {
                guard let gid = LocalAccounts.groupID(named: name) else { throw RPCServerError.groupNotFound(name) }
                groupID = gid
            }
            let channel = try await bootstrap.bind(
                unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: setUp)
            // Until chmod runs the file has the umask's mode (0755 with the usual 022), which
            // lets only the owner connect, so the window grants nobody extra access.
            if let groupID, chown(path, uid_t.max, groupID) != 0 {
                let code = errno
                try? await channel.channel.close()
                throw RPCServerError.system("set the group of", path: path, errno: code)
            }
            if chmod(path, mode_t(configuration.socketMode)) != 0 {
                let code = errno
                try? await channel.channel.close()
                throw RPCServerError.system("set the mode of", path: path, errno: code)
            }
            return RPCListener(channel: channel, path: path, quiescing: quiescing)
        }
    }

    /// Stops accepting (the socket closes, ending ``channel``'s connections) and tells each
    /// open connection to read no new calls.
    func quiesce() {
        quiescing.initiateShutdown(promise: nil)
    }

    /// Removes the socket file, so that clients find no daemon rather than one that refuses.
    func removeSocketFile() {
        if let path { unlink(path) }
    }

    /// Closes a socket that never served.
    func close() {
        quiesce()
        removeSocketFile()
    }
}
