/// Conversion between bytes and the hexadecimal strings used on the wire for GATT values.
public enum HexBytes {
    /// The bytes of a hex string (`"0a1B"` → `[0x0a, 0x1b]`); `nil` for an odd length or a non-hex digit.
    public static func decode(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var position = 0
        while position < digits.count {
            guard let high = nibble(digits[position]), let low = nibble(digits[position + 1]) else { return nil }
            bytes.append(high << 4 | low)
            position += 2
        }
        return bytes
    }

    /// The lowercase hex string of `bytes`.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    public static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Bytes that travel as hex (`"0a1b"`; written lowercase, read in either case).
@propertyWrapper
public struct Hex: Sendable, Hashable, Codable {
    public var wrappedValue: [UInt8]

    public init(wrappedValue: [UInt8]) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let bytes = HexBytes.decode(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not hex bytes like \"0a1b\"")
        }
        wrappedValue = bytes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(HexBytes.encode(wrappedValue))
    }
}
