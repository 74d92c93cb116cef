/// A board's Bluetooth address, its identity in the fleet.
///
/// Always normalized to upper case `AA:BB:CC:DD:EE:FF`. Names are not unique; the address is.
public struct BoardAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The normalized text form, e.g. `"C0:98:E5:49:00:01"`.
    public let rawValue: String

    /// Parses `text` (upper or lower case hex, colon separated); throws
    /// ``BoardAddressError`` saying what is wrong.
    public init(parsing text: String) throws(BoardAddressError) {
        if let normalized = Self.normalized(text) {
            rawValue = normalized
            return
        }
        // Not an address: find what is wrong with it, to say so.
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else {
            throw BoardAddressError(text: text, reason: "it must have six colon-separated parts")
        }
        for part in parts {
            guard part.count == 2, part.allSatisfy(\.isHexDigit) else {
                throw BoardAddressError(text: text, reason: "each part must be two hexadecimal digits")
            }
        }
        rawValue = text.uppercased()
    }

    /// `text` in upper case when it is six colon-separated pairs of hex digits, read byte by
    /// byte (addresses are parsed at every BlueZ signal, and every link counted); nil
    /// otherwise. Text already in upper case (as BlueZ writes addresses) is kept as it is.
    private static func normalized(_ text: String) -> String? {
        guard text.utf8.count == 17 else { return nil }
        var lowercase = false
        for (index, byte) in text.utf8.enumerated() {
            switch (index % 3, byte) {
            case (2, UInt8(ascii: ":")): continue
            case (0..<2, UInt8(ascii: "0")...UInt8(ascii: "9")), (0..<2, UInt8(ascii: "A")...UInt8(ascii: "F")): continue
            case (0..<2, UInt8(ascii: "a")...UInt8(ascii: "f")): lowercase = true
            default: return nil
            }
        }
        guard lowercase else { return text }
        return String(decoding: text.utf8.map { (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) ? $0 - 32 : $0 }, as: UTF8.self)
    }

    /// Parses `text`, or returns nil when it is not a valid address.
    public init?(_ text: String) {
        guard let parsed = try? BoardAddress(parsing: text) else { return nil }
        self = parsed
    }

    public var description: String { rawValue }

    public static func < (lhs: BoardAddress, rhs: BoardAddress) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Why a string is not a Bluetooth address.
public struct BoardAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The rejected input.
    public let text: String
    /// What is wrong with it.
    public let reason: String

    public var description: String {
        "\"\(text)\" is not a Bluetooth address (like AA:BB:CC:DD:EE:FF): \(reason)."
    }
}
