public import FleetCore
import FleetRPC
public import JSONRPC

extension FleetError: RPCErrorConvertible {
    /// The JSON-RPC error a whole call fails with when the fleet refuses it.
    public var rpcError: RPCError {
        switch code {
        case .notFound: RPCError(.boardNotFound, message)
        case .notSupported: RPCError(.characteristicNotFound, message)
        case .adapterOff: RPCError(.adapterUnavailable, message)
        case .bluezUnavailable: RPCError(.bluezUnavailable, message)
        case .timeout: RPCError(.timeout, message)
        case .busy: RPCError(.busy, message)
        case .notConnected: RPCError(.notConnected, message)
        case .gattError: RPCError(.gattError, message)
        case .invalidArgument: RPCError(.invalidParams, message)
        case .cancelled: RPCError(.shuttingDown, message)
        case .limitReached: RPCError(.limitReached, message)
        case .absent, .failed, .connectFailed, .internalError: RPCError(.internalError, message)
        }
    }
}
