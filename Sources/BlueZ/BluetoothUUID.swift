/// A Bluetooth UUID in BlueZ's canonical form: 128-bit, lowercase, dashed
/// (`0000ffe1-0000-1000-8000-00805f9b34fb`). 16- and 32-bit short forms (`FFE1`, `0xFFE1`)
/// expand onto the Bluetooth base UUID, so `BluetoothUUID("FFE1") == BluetoothUUID("0000ffe1-…")`.
public struct BluetoothUUID: Sendable, Hashable, CustomStringConvertible, Comparable {
    public let uuidString: String

    static let baseSuffix = "-0000-1000-8000-00805f9b34fb"

    /// Parses a 16-, 32- or 128-bit UUID; nil when `text` is none of those.
    public init?(_ text: String) {
        var hex = text.lowercased()
        if hex.hasPrefix("0x") { hex.removeFirst(2) }
        let isHex: (Substring) -> Bool = { $0.allSatisfy(\.isHexDigit) }
        switch hex.count {
        case 4 where isHex(Substring(hex)):
            uuidString = "0000" + hex + Self.baseSuffix
        case 8 where isHex(Substring(hex)):
            uuidString = hex + Self.baseSuffix
        case 36:
            let parts = hex.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.map(\.count) == [8, 4, 4, 4, 12], parts.allSatisfy(isHex) else { return nil }
            uuidString = hex
        default:
            return nil
        }
    }

    public var description: String { uuidString }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.uuidString < rhs.uuidString }
}
