import BlueZ

/// A GATT service or characteristic UUID, as the fleet's callers name it: 16-, 32- or
/// 128-bit, any case; kept in its full lower-case form.
public struct GattUUID: Sendable, Hashable, CustomStringConvertible {
    let bluetooth: BluetoothUUID

    /// nil when `text` is not a Bluetooth UUID.
    public init?(_ text: String) {
        guard let uuid = BluetoothUUID(text) else { return nil }
        bluetooth = uuid
    }

    /// The full 128-bit form, lower case.
    public var uuidString: String { bluetooth.uuidString }

    public var description: String { uuidString }
}
