/// A temperature in whole degrees Celsius, as the board reports it.
public struct Celsius: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Whole degrees.
    public let degrees: Int

    public init(degrees: Int) { self.degrees = degrees }

    /// Decodes the Temperature characteristic's single byte as a signed `Int8`: the sketch
    /// writes `(int)HTS.readTemperature()` into a byte, so `0xFB` is -5 °C, `0x19` is 25 °C.
    public init(rawByte: UInt8) { degrees = Int(Int8(bitPattern: rawByte)) }

    /// Decodes a characteristic value; throws unless it is exactly one byte.
    public init(value: some Collection<UInt8>) throws(FleetError) {
        guard value.count == 1, let byte = value.first else {
            throw FleetError(
                .gattError, "The temperature value has \(value.count) bytes; the board sends exactly 1.")
        }
        self.init(rawByte: byte)
    }

    public var description: String { "\(degrees) °C" }

    public static func < (lhs: Celsius, rhs: Celsius) -> Bool { lhs.degrees < rhs.degrees }
}
