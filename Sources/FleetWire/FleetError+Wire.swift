public import FleetCore
public import FleetRPC

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
        case .standby: self = .standby
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
