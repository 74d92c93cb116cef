/// The error of one board in a fleet-wide result.
public struct BoardError: Sendable, Hashable, Codable {
    public var code: BoardErrorCode
    /// One sentence for a person.
    public var message: String
    /// Whether trying again may succeed without anyone doing anything.
    public var retryable: Bool

    public init(code: BoardErrorCode, message: String, retryable: Bool) {
        self.code = code
        self.message = message
        self.retryable = retryable
    }
}
