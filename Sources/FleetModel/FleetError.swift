/// A per-board failure: a stable ``code`` plus a sentence for humans. On the wire:
/// `{"code": "timeout", "message": "…", "retryable": true}`.
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

extension FleetError: Codable {
    enum CodingKeys: String, CodingKey { case code, message, retryable }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(try container.decode(FleetErrorCode.self, forKey: .code), try container.decode(String.self, forKey: .message))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(message, forKey: .message)
        try container.encode(retryable, forKey: .retryable)
    }
}
