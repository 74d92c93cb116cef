/// A per-board failure: a stable ``code`` plus a sentence for humans.
public struct FleetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable machine-readable code.
    public let code: FleetErrorCode
    /// A clear sentence saying what went wrong.
    public let message: String

    public init(_ code: FleetErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether retrying later may succeed (from ``code``).
    public var retryable: Bool { code.retryable }

    public var description: String { "\(code.rawValue): \(message)" }
}
