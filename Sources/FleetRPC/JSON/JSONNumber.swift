/// A JSON number kept as its exact literal text, so a request id like `1.0`, `1e3` or
/// `123456789012345678901234567890` is echoed byte for byte.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number as written in JSON.
    public let literal: String

    /// A number from JSON text; `nil` unless `literal` is exactly one JSON number.
    public init?(literal: String) {
        guard JSONNumber.isValidLiteral(literal) else { return nil }
        self.literal = literal
    }

    /// A number from an integer.
    public init(_ value: Int64) {
        self.literal = String(value)
    }

    /// A number from a finite double; `nil` for NaN and infinities, which JSON cannot express.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        self.literal = value.description
    }

    init(validatedLiteral: String) {
        self.literal = validatedLiteral
    }

    /// The value as an integer, when the literal is one that fits `Int64`.
    public var int64Value: Int64? { Int64(literal) }

    /// The value as a double (possibly rounded).
    public var doubleValue: Double { Double(literal) ?? .nan }

    public var description: String { literal }

    static func isValidLiteral(_ literal: String) -> Bool {
        var parser = JSONParser(Array(literal.utf8), maxDepth: 1)
        guard let value = try? parser.parseDocument() else { return false }
        switch value {
        case .int, .double:
            // The parser skips surrounding whitespace; a literal must not have any.
            guard let first = literal.utf8.first, let last = literal.utf8.last else { return false }
            let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
            return (first == UInt8(ascii: "-") || isDigit(first)) && isDigit(last)
        default: return false
        }
    }
}

extension JSONNumber: Codable {
    /// Decoding through `JSONDecoder` keeps integers exact but normalises other numbers; the
    /// server reads frames with ``JSONValue/init(parsing:maxDepth:)`` and keeps them exact.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int64.self) {
            self.init(value)
        } else {
            let value = try container.decode(Double.self)
            guard let number = JSONNumber(value) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "The number is not finite.")
            }
            self = number
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value = int64Value {
            try container.encode(value)
        } else {
            try container.encode(doubleValue)
        }
    }
}
