/// The result of one operation on one board within a fleet-wide call.
///
/// On the wire (`Value` Codable): `{"address", "name", "ok", "error"?, "latencyMs",
/// "pending"?}`, with the value's own fields beside them when `ok` (a temperature's
/// `celsius` and `ageMs`, a GATT read's `value`…).
public struct BoardOutcome<Value: Sendable>: Sendable {
    /// The board.
    public let address: BoardAddress
    /// Its advertised name (or alias), if known.
    public let name: String?
    /// The value, or a stable error code with a message.
    public let result: Result<Value, FleetError>
    /// Time from the start of the call until this board's result was known.
    public let latency: Duration
    /// A change that could not be made now (the board absent, out of reach) but is recorded
    /// and made when the board is back (`led.set`); nil where that does not apply.
    public let pending: Bool?

    public init(
        address: BoardAddress, name: String?, result: Result<Value, FleetError>, latency: Duration, pending: Bool? = nil
    ) {
        self.address = address
        self.name = name
        self.result = result
        self.latency = latency
        self.pending = pending
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

    /// The same outcome with its value transformed.
    public func map<Other: Sendable>(_ transform: (Value) -> Other) -> BoardOutcome<Other> {
        BoardOutcome<Other>(address: address, name: name, result: result.map(transform), latency: latency, pending: pending)
    }

    /// The same outcome, `pending` set for a failure the change outlives.
    public func pending(when outlives: (FleetError) -> Bool) -> BoardOutcome {
        BoardOutcome(address: address, name: name, result: result, latency: latency, pending: error.flatMap { outlives($0) ? true : nil })
    }
}

extension BoardOutcome: Equatable where Value: Equatable {}
extension BoardOutcome: Hashable where Value: Hashable {}

extension BoardOutcome: Codable where Value: Codable {
    enum CodingKeys: String, CodingKey { case address, name, ok, error, latencyMs, pending }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .name)
        let result: Result<Value, FleetError> =
            try container.decode(Bool.self, forKey: .ok)
            ? .success(try Value(from: decoder)) : .failure(try container.decode(FleetError.self, forKey: .error))
        self.init(
            address: try container.decode(BoardAddress.self, forKey: .address), name: name.isEmpty ? nil : name,
            result: result, latency: .milliseconds(try container.decode(Int.self, forKey: .latencyMs)),
            pending: try container.decodeIfPresent(Bool.self, forKey: .pending))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(address, forKey: .address)
        try container.encode(name ?? "", forKey: .name)
        try container.encode(succeeded, forKey: .ok)
        try container.encodeIfPresent(error, forKey: .error)
        try container.encode(latency.wholeMilliseconds, forKey: .latencyMs)
        try container.encodeIfPresent(pending, forKey: .pending)
        // The value's fields beside the outcome's, in the same object.
        try value?.encode(to: encoder)
    }
}
