/// The result of one operation on one board within a fleet command.
public struct BoardOutcome<Value: Sendable>: Sendable {
    /// The board.
    public let address: BoardAddress
    /// Its advertised name (or alias), if known.
    public let name: String?
    /// The value, or a stable error code with a message.
    public let result: Result<Value, FleetError>
    /// Time from the start of the command until this board's result was known.
    public let latency: Duration

    public init(address: BoardAddress, name: String?, result: Result<Value, FleetError>, latency: Duration) {
        self.address = address
        self.name = name
        self.result = result
        self.latency = latency
    }

    /// Whether the operation succeeded on this board.
    public var succeeded: Bool {
        if case .success = result { return true }
        return false
    }

    /// The value on success.
    public var value: Value? { try? result.get() }

    /// The error on failure.
    public var error: FleetError? {
        if case .failure(let error) = result { return error }
        return nil
    }
}

extension BoardOutcome: Equatable where Value: Equatable {}
extension BoardOutcome: Hashable where Value: Hashable {}
