import BlueZ

/// A GATT service of a connected device, as a client sees it: by handle.
public struct DeviceGATTService: Sendable, Hashable {
    /// 128-bit, lowercase.
    public let uuid: String
    public let handle: Int
    public let primary: Bool
    public let characteristics: [DeviceGATTCharacteristic]

    init(_ service: BlueZGATTService) {
        uuid = service.uuid?.uuidString ?? ""
        handle = Int(service.handle)
        primary = service.primary
        characteristics = service.characteristics.map(DeviceGATTCharacteristic.init)
    }
}

/// A characteristic of a ``DeviceGATTService``.
public struct DeviceGATTCharacteristic: Sendable, Hashable {
    public let uuid: String
    public let handle: Int
    /// BlueZ's flags: `read`, `write`, `write-without-response`, `notify`, `indicate`, ….
    public let properties: [String]
    public let descriptors: [DeviceGATTDescriptor]

    init(_ characteristic: BlueZGATTCharacteristic) {
        uuid = characteristic.uuid?.uuidString ?? ""
        handle = Int(characteristic.handle)
        properties = characteristic.flags
        descriptors = characteristic.descriptors.map { DeviceGATTDescriptor(uuid: $0.uuid?.uuidString ?? "", handle: Int($0.handle)) }
    }
}

/// A descriptor of a ``DeviceGATTCharacteristic``.
public struct DeviceGATTDescriptor: Sendable, Hashable {
    public let uuid: String
    public let handle: Int
}

/// What a device advertised, as the fleet's discovery heard it.
public struct DeviceAdvertisement: Sendable, Hashable {
    public let address: BoardAddress
    /// `public` or `random`.
    public let addressType: String?
    public let name: String?
    public let rssi: Int?
    public let txPower: Int?
    /// Company identifier → bytes.
    public let manufacturerData: [UInt16: [UInt8]]
    /// Service UUID (128-bit, lowercase) → bytes.
    public let serviceData: [String: [UInt8]]
    /// 128-bit, lowercase.
    public let serviceUUIDs: [String]
    /// The adapter that heard it (`hci0`).
    public let adapter: String
    public let connected: Bool

    init?(_ advertisement: BlueZAdvertisement) {
        let device = advertisement.device
        guard let address = BoardAddress(device.address) else { return nil }
        self.address = address
        addressType = device.addressType
        name = device.name
        rssi = device.rssi.map(Int.init)
        txPower = advertisement.txPower.map(Int.init)
        manufacturerData = advertisement.manufacturerData
        var data: [String: [UInt8]] = [:]
        for (uuid, bytes) in advertisement.serviceData { data[BluetoothUUID(uuid)?.uuidString ?? uuid.lowercased()] = bytes }
        serviceData = data
        serviceUUIDs = device.uuids.map(\.uuidString)
        adapter = device.adapterPath.name
        connected = device.hasLink
    }
}

/// A device connected to an adapter with its services resolved
/// (``DeviceProxy/connectedDevices(services:adapter:)``).
public struct ConnectedDevice: Sendable, Hashable {
    public let address: BoardAddress
    /// `public` or `random`.
    public let addressType: String?
    /// The device's name (not BlueZ's alias made of its address).
    public let name: String?
    /// The adapter of the link (`hci0`).
    public let adapter: String
    /// 128-bit, lowercase.
    public let serviceUUIDs: [String]
}

/// A client following a characteristic's notifications (``DeviceProxy/followAttribute(_:handle:onValue:onEnd:)``).
public final class DeviceFollow: Sendable {
    private let session: BlueZNotificationSession

    init(_ session: BlueZNotificationSession) {
        self.session = session
    }

    /// Stops following (idempotent); BlueZ hears `StopNotify` when no one follows any more.
    public func cancel() { session.cancel() }
}
