/// Why a frame is not acceptable JSON, with the byte offset where the problem was found.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A sentence saying what is wrong, without the offset.
    public let reason: String
    /// Byte offset in the input where the problem was found.
    public let offset: Int

    public init(_ reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "\(reason) (at byte \(offset))" }
}
