public import FleetCore
public import FleetRPC

extension FleetError: RPCErrorConvertible {
    /// The JSON-RPC error a whole call fails with when the fleet refuses it.
    public var rpcError: RPCError {
        switch code {
        case .notFound: RPCError(.boardNotFound, message)
        case .adapterOff: RPCError(.adapterUnavailable, message)
        case .bluezUnavailable: RPCError(.bluezUnavailable, message)
        case .timeout: RPCError(.timeout, message)
        case .busy: RPCError(.busy, message)
        case .notConnected: RPCError(.notConnected, message)
        case .gattError: RPCError(.gattError, message)
        case .invalidArgument: RPCError(.invalidParams, message)
        case .cancelled: RPCError(.shuttingDown, message)
        case .absent, .failed: RPCError(.internalError, message)
        }
    }
}

extension BoardError {
    /// One board's failure as the wire reports it.
    public init(_ error: FleetError) {
        let code: BoardErrorCode =
            switch error.code {
            case .absent: .absent
            case .timeout: .timeout
            case .notConnected: .notConnected
            case .gattError: .gattError
            case .adapterOff: .adapterOff
            case .bluezUnavailable: .bluezUnavailable
            case .notFound: .notFound
            case .busy: .busy
            case .cancelled: .cancelled
            case .invalidArgument: .invalidArgument
            case .failed: .failed
            }
        self.init(code: code, message: error.message, retryable: error.retryable)
    }
}

extension BoardState {
    public init(_ phase: BoardPhase) {
        switch phase {
        case .discovered: self = .discovered
        case .connecting: self = .connecting
        case .resolving: self = .resolving
        case .ready: self = .ready
        case .disconnecting: self = .disconnecting
        case .backingOff: self = .backingOff
        case .absent: self = .absent
        case .waitingForAdapter: self = .waitingForAdapter
        case .failed: self = .failed
        }
    }
}
