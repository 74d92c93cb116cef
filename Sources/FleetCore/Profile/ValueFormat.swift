import Foundation

/// How a characteristic's bytes carry a number: little-endian, as GATT and Arduino's
/// `BLE*Characteristic` types write them.
public enum ValueFormat: String, Sendable, Hashable, CaseIterable {
    case sint8, uint8, int16, uint16, int32, float32

    /// How many bytes a value takes.
    public var size: Int {
        switch self {
        case .sint8, .uint8: 1
        case .int16, .uint16: 2
        case .int32, .float32: 4
        }
    }

    /// The number in `bytes` (exactly ``size`` of them), or nil.
    public func decode(_ bytes: [UInt8]) -> Double? {
        guard bytes.count == size else { return nil }
        let raw = bytes.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return switch self {
        case .sint8: Double(Int8(truncatingIfNeeded: raw))
        case .uint8: Double(UInt8(truncatingIfNeeded: raw))
        case .int16: Double(Int16(truncatingIfNeeded: raw))
        case .uint16: Double(UInt16(truncatingIfNeeded: raw))
        case .int32: Double(Int32(bitPattern: raw))
        case .float32: Double(Float(bitPattern: raw))
        }
    }

    /// The bytes of `value` (rounded to a whole number for the integer formats), or nil when
    /// it does not fit.
    public func encode(_ value: Double) -> [UInt8]? {
        guard value.isFinite else { return nil }
        let raw: UInt32
        switch self {
        case .float32:
            raw = Float(value).bitPattern
        default:
            let whole = value.rounded()
            let range: ClosedRange<Double> =
                switch self {
                case .sint8: -128...127
                case .uint8: 0...255
                case .int16: -32768...32767
                case .uint16: 0...65535
                default: -2_147_483_648...2_147_483_647
                }
            guard range.contains(whole) else { return nil }
            raw = UInt32(truncatingIfNeeded: Int64(whole))
        }
        return (0..<size).map { UInt8(truncatingIfNeeded: raw >> (8 * UInt32($0))) }
    }
}
