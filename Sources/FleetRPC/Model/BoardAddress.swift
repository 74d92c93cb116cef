/// Bluetooth device addresses as the wire carries them: `AA:BB:CC:DD:EE:FF`.
public enum BoardAddress {
    /// Whether `string` is six colon-separated pairs of hex digits (either case).
    public static func isValid(_ string: String) -> Bool {
        let bytes = Array(string.utf8)
        guard bytes.count == 17 else { return false }
        for (position, byte) in bytes.enumerated() {
            if position % 3 == 2 {
                guard byte == UInt8(ascii: ":") else { return false }
            } else if HexBytes.nibble(byte) == nil {
                return false
            }
        }
        return true
    }

    /// The address in BlueZ's canonical uppercase form, or `nil` if it is not an address.
    public static func normalized(_ string: String) -> String? {
        isValid(string) ? string.uppercased() : nil
    }
}
