import FleetRPC
import FleetRPCClient
import JSONRPC

/// A connection to the daemon's socket of its own, made when first needed and made again
/// after it broke. blefleet-web keeps three: the feed's (events), the pages' calls (`/rpc`)
/// and the scrapes' (`/metrics`), so that no one of them can starve or cut off the others:
/// a call the daemon refuses by closing its connection (a frame over its limit) breaks
/// only the calls under way on that line.
///
/// When it connects it asks `daemon.status` for the daemon's frame limit, and refuses a call
/// whose frame would pass it (`-32010`, said by blefleet-web) instead of sending it.
actor DaemonLine {
    let socketPath: String
    private var client: FleetRPCClient?
    /// The daemon's `max-frame-bytes`, as it said when this line connected.
    private var maxFrameBytes: Int?
    /// The daemon's groups, as it said when this line connected (kept while it is away: they
    /// change only with its configuration, and a call then fails anyway).
    private var access: DaemonStatus.Access?

    init(socketPath: String) {
        self.socketPath = socketPath
    }

    func call(_ method: String, params: JSONValue?, timeout: Duration) async throws(FleetRPCClientError) -> JSONValue {
        let rpc = try await connection()
        if let limit = maxFrameBytes {
            // The request as the client will write it, give or take its id's digits.
            let size = JSONValue.object([
                "jsonrpc": "2.0", "id": .int(Int64(Int32.max)), "method": .string(method), "params": params ?? .null,
            ]).serialized().count + 1
            if size > limit {
                throw .rpcError(
                    method: method, code: RPCErrorCode.frameTooLarge.rawValue,
                    message: "The call would be \(size) bytes long; blefleetd takes at most \(limit) (max-frame-bytes).",
                    data: nil)
            }
        }
        do {
            return try await rpc.call(method, params: params, timeout: timeout)
        } catch {
            broken(rpc, error)
            throw error
        }
    }

    func call<Method: RPCMethod>(_ method: Method.Type, _ params: Method.Params, timeout: Duration) async throws(FleetRPCClientError)
        -> Method.Result
    {
        let rpc = try await connection()
        do {
            return try await rpc.call(method, params, timeout: timeout)
        } catch {
            broken(rpc, error)
            throw error
        }
    }

    /// The groups the daemon serves, connecting first if this line is not connected.
    func daemonAccess() async -> DaemonStatus.Access? {
        if client == nil || client?.isClosed == true { _ = try? await connection() }
        return access
    }

    func close() {
        client?.close()
        client = nil
    }

    private func connection() async throws(FleetRPCClientError) -> FleetRPCClient {
        // A connection the daemon closed (idle for its idle-timeout-s: the pages' calls and
        // the scrapes hold nothing there) is made again, not tried.
        if let client, !client.isClosed { return client }
        client?.close()
        let made = try FleetRPCClient(socketPath: socketPath)
        client = made
        maxFrameBytes = nil
        // A daemon that does not tell (an older one) is taken at its word when it answers.
        if let status = try? await made.call(FleetMethods.DaemonStatus.self, timeout: .seconds(10)), client === made {
            maxFrameBytes = status.limits?.maxFrameBytes
            access = status.access
        }
        return made
    }

    /// A connection that closed (or stopped answering) is not used again.
    private func broken(_ rpc: FleetRPCClient, _ error: FleetRPCClientError) {
        switch error {
        case .connectionClosed, .daemonUnreachable, .malformedReply:
            break
        case .rpcError(_, let code, _, _) where code == RPCErrorCode.frameTooLarge.rawValue:
            break  // the daemon closes the connection after this answer
        default:
            return
        }
        rpc.close()
        if client === rpc { client = nil }
    }
}
