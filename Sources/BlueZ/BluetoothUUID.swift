/// A Bluetooth UUID in BlueZ's canonical form: 128-bit, lowercase, dashed
/// (`0000ffe1-0000-1000-8000-00805f9b34fb`). 16- and 32-bit short forms (`FFE1`, `0xFFE1`)
/// expand onto the Bluetooth base UUID, so `BluetoothUUID("FFE1") == BluetoothUUID("0000ffe1-…")`.
public struct BluetoothUUID: Sendable, Hashable, CustomStringConvertible, Comparable {
    public let uuidString: String

    static let baseSuffix = "-0000-1000-8000-00805f9b34fb"

    /// Parses a 16-, 32- or 128-bit UUID; nil when `text` is none of those.
    public init?(_ text: String) {
        // On the text's bytes: BlueZ lists every device's UUIDs, and the fleet reads them
        // whenever it looks at an adapter's devices (Character by Character was most of
        // the time the simulation spent).
        if Self.isCanonical(text) {
            uuidString = text
            return
        }
        var bytes = Array(text.utf8)
        if bytes.count >= 2, bytes[0] == UInt8(ascii: "0"), bytes[1] | 0x20 == UInt8(ascii: "x") { bytes.removeFirst(2) }
        func isHex(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
        }
        // Lowercase the letters (every byte left is ASCII once checked).
        func lowered() -> String { String(decoding: bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") ? $0 | 0x20 : $0 }, as: UTF8.self) }
        switch bytes.count {
        case 4 where bytes.allSatisfy(isHex):
            uuidString = "0000" + lowered() + Self.baseSuffix
        case 8 where bytes.allSatisfy(isHex):
            uuidString = lowered() + Self.baseSuffix
        case 36:
            for (index, byte) in bytes.enumerated() {
                let dash = index == 8 || index == 13 || index == 18 || index == 23
                guard dash ? byte == UInt8(ascii: "-") : isHex(byte) else { return nil }
            }
            uuidString = lowered()
        default:
            return nil
        }
    }

    /// Whether `text` is already in the canonical form (as BlueZ writes every UUID): kept as is.
    private static func isCanonical(_ text: String) -> Bool {
        var index = 0
        for byte in text.utf8 {
            let dash = index == 8 || index == 13 || index == 18 || index == 23
            if dash ? byte != UInt8(ascii: "-")
                : !((UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte))
            {
                return false
            }
            index += 1
        }
        return index == 36
    }

    public var description: String { uuidString }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.uuidString < rhs.uuidString }
}
