/// The GATT table of the Nano 33 BLE Sense LED + temperature sketch (shared/BOARD-PROFILE.md).
public enum NanoProfile {
    /// Advertised by every board: the discovery filter and the adoption test.
    public static let ledService = GattUUID("cd48409a-f3cc-11ed-a05b-0242ac120003")!
    /// Write-only, with response: one byte, 0x00 off, anything else on.
    public static let ledStatus = GattUUID("cd48409b-f3cc-11ed-a05b-0242ac120003")!
    public static let sensorService = GattUUID("d888a9c2-f3cc-11ed-a05b-0242ac120003")!
    /// Read + notify: one signed byte, whole degrees Celsius.
    public static let temperature = GattUUID("d888a9c3-f3cc-11ed-a05b-0242ac120003")!
}
