import FleetRPC
public import JSONRPC
public import Logging

/// What a method handler knows about the call it serves.
public struct RPCContext: Sendable {
    /// The method called.
    public let method: RPCMethodDescriptor
    /// The request id; `nil` for a notification.
    public let id: RPCID?
    /// The connection the call came on: credentials, and notifications back to the client.
    public let connection: RPCConnection
    /// What the caller may do.
    public let role: AccessRole
    /// A logger carrying `rpc.method`, `client.uid` and `client.pid`.
    public let logger: Logger

    /// The caller's kernel credentials.
    public var credentials: PeerCredentials { connection.credentials }
}
