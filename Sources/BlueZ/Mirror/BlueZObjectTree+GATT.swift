import DBus

/// A connected device's GATT database as BlueZ shows it, by attribute handle: what a GATT
/// client (bleak, a lab's script) needs to read, write and follow any attribute.
///
/// BlueZ names each GATT object after its handle (`service000a`, `char000b`, `desc000d`,
/// as in `src/gatt-client.c`; BlueZoo does the same), and bleak's BlueZ backend takes the
/// handle from there too: a script's handles mean the same through blefleet.
public struct BlueZGATTService: Sendable, Hashable {
    public let path: String
    public let handle: UInt16
    public let uuid: BluetoothUUID?
    public let primary: Bool
    public var characteristics: [BlueZGATTCharacteristic]
}

/// One characteristic of a ``BlueZGATTService``.
public struct BlueZGATTCharacteristic: Sendable, Hashable {
    public let path: String
    public let handle: UInt16
    public let uuid: BluetoothUUID?
    /// BlueZ's `Flags` (`read`, `write`, `write-without-response`, `notify`, `indicate`, …).
    public let flags: [String]
    /// `MTU` (BlueZ 5.62 and later), when shown.
    public let mtu: UInt16?
    public var descriptors: [BlueZGATTDescriptor]
}

/// One descriptor of a ``BlueZGATTCharacteristic``.
public struct BlueZGATTDescriptor: Sendable, Hashable {
    public let path: String
    public let handle: UInt16
    public let uuid: BluetoothUUID?
}

/// An attribute found by handle: a characteristic's or a descriptor's object.
public struct BlueZGATTAttribute: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case characteristic
        case descriptor
    }
    public let path: String
    public let kind: Kind
    public let handle: UInt16

    /// The D-Bus interface its `ReadValue`/`WriteValue` belong to.
    public var interface: String {
        kind == .characteristic ? BlueZInterfaces.gattCharacteristic : BlueZInterfaces.gattDescriptor
    }
}

/// What a device's latest advertisement said, as BlueZ keeps it on `Device1`.
public struct BlueZAdvertisement: Sendable, Hashable {
    public let device: BlueZDevice
    /// `TxPower`, when advertised.
    public let txPower: Int16?
    /// `ManufacturerData`: company identifier → bytes.
    public let manufacturerData: [UInt16: [UInt8]]
    /// `ServiceData`: service UUID (as BlueZ writes it) → bytes.
    public let serviceData: [String: [UInt8]]
}

extension BlueZObjectTree {
    /// The handle in a GATT object's path: the hex digits after `service`, `char` or `desc`.
    public static func handle(ofGATTPath path: String) -> UInt16? {
        guard let last = path.split(separator: "/").last else { return nil }
        for prefix in ["service", "char", "desc"] where last.hasPrefix(prefix) {
            return UInt16(last.dropFirst(prefix.count), radix: 16)
        }
        return nil
    }

    /// The GATT services BlueZ resolved for the device at `devicePath`, each with its
    /// characteristics and their descriptors, in handle order.
    public func gattServices(device: DevicePath) -> [BlueZGATTService] {
        let devicePath = device.rawValue
        var services: [String: BlueZGATTService] = [:]
        for (path, props) in objects(implementing: BlueZInterfaces.gattService)
        where props["Device"]?.string == devicePath {
            guard let handle = Self.handle(ofGATTPath: path) else { continue }
            services[path] = BlueZGATTService(
                path: path, handle: handle, uuid: props["UUID"]?.string.flatMap(BluetoothUUID.init),
                primary: props["Primary"]?.bool ?? true, characteristics: [])
        }
        var characteristics: [String: BlueZGATTCharacteristic] = [:]
        for (path, props) in objects(implementing: BlueZInterfaces.gattCharacteristic) {
            guard let service = props["Service"]?.string, services[service] != nil,
                let handle = Self.handle(ofGATTPath: path)
            else { continue }
            characteristics[path] = BlueZGATTCharacteristic(
                path: path, handle: handle, uuid: props["UUID"]?.string.flatMap(BluetoothUUID.init),
                flags: (props["Flags"]?.array ?? []).compactMap(\.string), mtu: props["MTU"]?.uint16, descriptors: [])
        }
        for (path, props) in objects(implementing: BlueZInterfaces.gattDescriptor) {
            guard let owner = props["Characteristic"]?.string, characteristics[owner] != nil,
                let handle = Self.handle(ofGATTPath: path)
            else { continue }
            characteristics[owner]?.descriptors.append(
                BlueZGATTDescriptor(path: path, handle: handle, uuid: props["UUID"]?.string.flatMap(BluetoothUUID.init)))
        }
        for characteristic in characteristics.values.sorted(by: { $0.handle < $1.handle }) {
            guard let service = objects[characteristic.path]?[BlueZInterfaces.gattCharacteristic]?["Service"]?.string
            else { continue }
            var sorted = characteristic
            sorted.descriptors.sort { $0.handle < $1.handle }
            services[service]?.characteristics.append(sorted)
        }
        return services.values.sorted { $0.handle < $1.handle }
    }

    /// The characteristic or descriptor of the device at `devicePath` with `handle`; with
    /// `descriptor`, only a descriptor, else a characteristic first.
    public func gattAttribute(device: DevicePath, handle: UInt16, descriptor: Bool = false) -> BlueZGATTAttribute? {
        let services = gattServices(device: device)
        if !descriptor {
            for service in services {
                if let found = service.characteristics.first(where: { $0.handle == handle }) {
                    return BlueZGATTAttribute(path: found.path, kind: .characteristic, handle: handle)
                }
            }
        }
        for service in services {
            for characteristic in service.characteristics {
                if let found = characteristic.descriptors.first(where: { $0.handle == handle }) {
                    return BlueZGATTAttribute(path: found.path, kind: .descriptor, handle: handle)
                }
            }
        }
        return nil
    }

    /// The device's latest advertisement as BlueZ holds it.
    public func advertisement(at device: DevicePath) -> BlueZAdvertisement? {
        properties(device.rawValue, BlueZInterfaces.device).map { BlueZAdvertisement(path: device.rawValue, properties: $0) }
    }
}

extension BlueZAdvertisement {
    /// From a device's `Device1` properties (for each advertisement seen: no tree built).
    public init(path: String, properties: BlueZObjectTree.Properties) {
        var manufacturer: [UInt16: [UInt8]] = [:]
        if case .dictionary(_, _, let entries) = properties["ManufacturerData"]?.unwrapped {
            for entry in entries {
                guard let company = entry.key.uint16, let bytes = entry.value.bytes else { continue }
                manufacturer[company] = bytes
            }
        }
        var serviceData: [String: [UInt8]] = [:]
        for (uuid, value) in properties["ServiceData"]?.dictionary ?? [:] {
            if let bytes = value.bytes { serviceData[uuid] = bytes }
        }
        self.init(
            device: BlueZDevice(path: path, properties: properties), txPower: properties["TxPower"]?.int16,
            manufacturerData: manufacturer, serviceData: serviceData)
    }
}

extension BlueZClient {
    /// `ReadValue` on a characteristic or descriptor.
    public func readValue(_ attribute: BlueZGATTAttribute, timeout: Duration = .seconds(10)) async throws -> [UInt8] {
        let reply = try await call(
            attribute.path, attribute.interface, "ReadValue", [.stringVariantDictionary([:])], timeout: timeout)
        guard let bytes = reply.first?.bytes else {
            throw BlueZError.other(name: "ReadValue", message: "reply carried no byte array")
        }
        return bytes
    }

    /// `WriteValue` on a characteristic (with `type`) or descriptor.
    public func writeValue(
        _ value: [UInt8], to attribute: BlueZGATTAttribute, type: GATTWriteType = .request, timeout: Duration = .seconds(10)
    ) async throws {
        let options: [String: DBusValue] = attribute.kind == .characteristic ? ["type": .string(type.rawValue)] : [:]
        try await call(
            attribute.path, attribute.interface, "WriteValue", [.bytes(value), .stringVariantDictionary(options)],
            timeout: timeout)
    }
}
