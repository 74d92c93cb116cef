public import DBus

/// A snapshot of BlueZ's exported objects: object path → interface → property → value.
/// Variants are unwrapped. Cheap to copy (copy-on-write dictionaries).
public struct BlueZObjectTree: Sendable {
    public typealias Properties = [String: DBusValue]

    public private(set) var objects: [String: [String: Properties]] = [:]
    /// Each path's child objects (an adapter's devices, a device's services, a service's
    /// characteristics, a characteristic's descriptors), so that what is asked of one
    /// adapter or device is found without looking at every object BlueZ exports.
    private var childPaths: [String: Set<String>] = [:]
    /// Each adapter's devices with a link up (by path): what the connection slots count, at
    /// every placement, kept as the links come and go.
    private var linkedPaths: [String: Set<String>] = [:]

    public init(objects: [String: [String: Properties]] = [:]) {
        for (path, interfaces) in objects { set(interfaces, at: path) }
    }

    /// The object at `path` with these interfaces; none removes it.
    mutating func set(_ interfaces: [String: Properties]?, at path: String) {
        let parent = Self.parent(of: path)
        if let interfaces, !interfaces.isEmpty {
            if objects.updateValue(interfaces, forKey: path) == nil { childPaths[parent, default: []].insert(path) }
        } else if objects.removeValue(forKey: path) != nil {
            childPaths[parent]?.remove(path)
            if childPaths[parent]?.isEmpty == true { childPaths[parent] = nil }
        }
        noteLink(at: path, parent: parent)
    }

    /// Keeps ``linkedPaths`` in step with the device at `path` (none: no link).
    private mutating func noteLink(at path: String, parent: String) {
        if hasLink(at: DevicePath(path)) == true {
            linkedPaths[parent, default: []].insert(path)
        } else if linkedPaths[parent]?.remove(path) != nil, linkedPaths[parent]?.isEmpty == true {
            linkedPaths[parent] = nil
        }
    }

    /// Changes properties of an object's interface (none when it lacks the interface).
    mutating func change(_ path: String, _ interface: String, _ changed: Properties, invalidated: [String]) {
        guard objects[path]?[interface] != nil else { return }
        objects[path]?[interface]?.merge(changed) { _, new in new }
        for name in invalidated { objects[path]?[interface]?[name] = nil }
        if interface == BlueZInterfaces.device { noteLink(at: path, parent: Self.parent(of: path)) }
    }

    /// The object above `path`: `/org/bluez/hci0/dev_AA` → `/org/bluez/hci0` (a device's
    /// adapter, a characteristic's service).
    public static func parent(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(path[..<slash])
    }

    /// The objects directly under `path` that have `interface`.
    private func children(of path: String, implementing interface: String) -> [(path: String, properties: Properties)] {
        (childPaths[path] ?? []).compactMap { child in objects[child]?[interface].map { (child, $0) } }
    }

    public func properties(_ path: String, _ interface: String) -> Properties? {
        objects[path]?[interface]
    }

    /// Every object that has `interface`, sorted by path.
    public func objects(implementing interface: String) -> [(path: String, properties: Properties)] {
        objects.compactMap { path, interfaces in
            interfaces[interface].map { (path, $0) }
        }.sorted { $0.path < $1.path }
    }

    public var adapters: [BlueZAdapter] {
        objects(implementing: BlueZInterfaces.adapter).map { BlueZAdapter(path: $0.path, properties: $0.properties) }
    }

    public func adapter(at path: AdapterPath) -> BlueZAdapter? {
        properties(path.rawValue, BlueZInterfaces.adapter).map { BlueZAdapter(path: path.rawValue, properties: $0) }
    }

    /// The adapter called `nameOrAddress`: its interface name (`hci0`) or its address.
    public func adapter(matching nameOrAddress: String) -> BlueZAdapter? {
        adapters.first { $0.name == nameOrAddress || $0.address.uppercased() == nameOrAddress.uppercased() }
    }

    public func device(at path: DevicePath) -> BlueZDevice? {
        properties(path.rawValue, BlueZInterfaces.device).map { BlueZDevice(path: path.rawValue, properties: $0) }
    }

    /// Whether the device at `path` has a link up (``BlueZDevice/hasLink``), read without
    /// building the device; nil when BlueZ shows no device there.
    public func hasLink(at path: DevicePath) -> Bool? {
        link(at: path).map { $0.connected || $0.servicesResolved }
    }

    /// The device at `path`'s `Connected` and `ServicesResolved`, read without building the
    /// device; nil when BlueZ shows no device there.
    public func link(at path: DevicePath) -> (connected: Bool, servicesResolved: Bool)? {
        guard let properties = properties(path.rawValue, BlueZInterfaces.device) else { return nil }
        return (properties["Connected"]?.bool == true, properties["ServicesResolved"]?.bool == true)
    }

    /// Devices known to one adapter (BlueZ lists other adapters' devices too; filter by
    /// `Adapter`): only the objects under the adapter are looked at, only its devices built.
    public func devices(onAdapter adapterPath: AdapterPath) -> [BlueZDevice] {
        children(of: adapterPath.rawValue, implementing: BlueZInterfaces.device).compactMap { path, properties -> BlueZDevice? in
            guard properties["Adapter"]?.string == adapterPath.rawValue else { return nil }
            return BlueZDevice(path: path, properties: properties)
        }.sorted { $0.path < $1.path }
    }

    /// The device of one adapter with address `address` (any case), if that adapter knows it:
    /// only that one is built.
    public func device(onAdapter adapterPath: AdapterPath, address: String) -> BlueZDevice? {
        let wanted = address.uppercased()
        func isIt(_ properties: Properties) -> Bool {
            properties["Adapter"]?.string == adapterPath.rawValue && properties["Address"]?.string?.uppercased() == wanted
        }
        // Where BlueZ puts it (its path is made of its address), else any path that has it.
        let direct = DevicePath(adapter: adapterPath, address: wanted)
        if let properties = objects[direct.rawValue]?[BlueZInterfaces.device], isIt(properties) {
            return BlueZDevice(path: direct.rawValue, properties: properties)
        }
        return children(of: adapterPath.rawValue, implementing: BlueZInterfaces.device)
            .filter { isIt($0.properties) }
            .min { $0.path < $1.path }
            .map { BlueZDevice(path: $0.path, properties: $0.properties) }
    }

    /// The devices of one adapter with a link up (``BlueZDevice/hasLink``): only those are built.
    public func linkedDevices(onAdapter adapterPath: AdapterPath) -> [BlueZDevice] {
        linked(onAdapter: adapterPath).map { BlueZDevice(path: $0.path, properties: $0.properties) }
    }

    /// One adapter's devices with a link up, in path order, as BlueZ's properties.
    private func linked(onAdapter adapterPath: AdapterPath) -> [(path: String, properties: Properties)] {
        (linkedPaths[adapterPath.rawValue] ?? []).sorted().compactMap { path in
            guard let properties = objects[path]?[BlueZInterfaces.device], properties["Adapter"]?.string == adapterPath.rawValue
            else { return nil }
            return (path, properties)
        }
    }

    /// The addresses (upper case) of one adapter's devices with a link up, in path order:
    /// what the slots count, without building the devices.
    public func linkedAddresses(onAdapter adapterPath: AdapterPath) -> [String] {
        linked(onAdapter: adapterPath).map { ($0.properties["Address"]?.string ?? "").uppercased() }
    }

    public func characteristic(at path: String) -> BlueZCharacteristic? {
        guard let props = properties(path, BlueZInterfaces.gattCharacteristic) else { return nil }
        let servicePath = props["Service"]?.string ?? ""
        let serviceUUID = properties(servicePath, BlueZInterfaces.gattService)?["UUID"]?.string
        return BlueZCharacteristic(path: path, properties: props, serviceUUID: serviceUUID.flatMap(BluetoothUUID.init))
    }

    /// Finds a characteristic by service and characteristic UUID under a device. GATT paths
    /// change whenever a device is resolved again, so callers look up after every connect.
    public func characteristic(
        device: DevicePath, service: BluetoothUUID, characteristic: BluetoothUUID
    ) -> BlueZCharacteristic? {
        let devicePath = device.rawValue
        // The device's services are the objects under it; their characteristics under them.
        let servicePaths = children(of: devicePath, implementing: BlueZInterfaces.gattService)
            .filter {
                $0.properties["Device"]?.string == devicePath
                    && $0.properties["UUID"]?.string.flatMap(BluetoothUUID.init) == service
            }
            .map(\.path)
        let found = servicePaths.flatMap { children(of: $0, implementing: BlueZInterfaces.gattCharacteristic) }
            .filter { path, props in
                props["Service"]?.string.map(servicePaths.contains) == true
                    && props["UUID"]?.string.flatMap(BluetoothUUID.init) == characteristic
            }
            .min { $0.path < $1.path }
        return found.map { BlueZCharacteristic(path: $0.path, properties: $0.properties, serviceUUID: service) }
    }

    /// All characteristics of a device's resolved services.
    public func characteristics(device: DevicePath) -> [BlueZCharacteristic] {
        let devicePath = device.rawValue
        let services = Dictionary(
            uniqueKeysWithValues: children(of: devicePath, implementing: BlueZInterfaces.gattService)
                .filter { $0.properties["Device"]?.string == devicePath }
                .map { ($0.path, $0.properties["UUID"]?.string.flatMap(BluetoothUUID.init)) })
        return services.keys.flatMap { children(of: $0, implementing: BlueZInterfaces.gattCharacteristic) }
            .sorted { $0.path < $1.path }
            .compactMap { path, props in
                guard let servicePath = props["Service"]?.string, let serviceUUID = services[servicePath] else { return nil }
                return BlueZCharacteristic(path: path, properties: props, serviceUUID: serviceUUID)
            }
    }
}

/// `org.bluez.Adapter1`, as far as blefleet needs it.
public struct BlueZAdapter: Sendable, Hashable {
    public let path: AdapterPath
    public let address: String
    public let powered: Bool
    public let discovering: Bool
    /// `Roles`: what the controller can be (`central`, `peripheral`, …); nil when BlueZ
    /// does not say (before 5.56).
    public let roles: [String]?

    public init(path: String, properties: BlueZObjectTree.Properties) {
        self.path = AdapterPath(path)
        self.address = properties["Address"]?.string ?? ""
        self.powered = properties["Powered"]?.bool ?? false
        self.discovering = properties["Discovering"]?.bool ?? false
        self.roles = properties["Roles"]?.array.map { $0.compactMap(\.string) }
    }

    /// The interface name, e.g. `hci0`.
    public var name: String { path.name }

    /// Whether the controller can connect to peripherals (a central), as far as BlueZ says.
    public var canBeCentral: Bool { roles.map { $0.contains("central") } ?? true }
}

/// `org.bluez.Device1`, as far as blefleet needs it.
public struct BlueZDevice: Sendable, Hashable {
    public let path: DevicePath
    public let adapterPath: AdapterPath
    public let address: String
    /// `AddressType`: "public" or "random".
    public let addressType: String?
    public let name: String?
    public let alias: String?
    public let rssi: Int16?
    public let uuids: [BluetoothUUID]
    public let connected: Bool
    public let servicesResolved: Bool
    /// BlueZ keeps a bond with the device through this adapter (`Bonded`, or `Paired` where
    /// BlueZ is older than 5.63): its keys work through no other adapter.
    public let bonded: Bool

    public init(path: String, properties: BlueZObjectTree.Properties) {
        self.path = DevicePath(path)
        self.adapterPath = AdapterPath(properties["Adapter"]?.string ?? "")
        self.address = (properties["Address"]?.string ?? "").uppercased()
        self.addressType = properties["AddressType"]?.string
        self.name = properties["Name"]?.string
        self.alias = properties["Alias"]?.string
        self.rssi = Self.usableRSSI(properties["RSSI"]?.int16)
        self.uuids = (properties["UUIDs"]?.array ?? []).compactMap { $0.string.flatMap(BluetoothUUID.init) }
        self.connected = properties["Connected"]?.bool ?? false
        self.servicesResolved = properties["ServicesResolved"]?.bool ?? false
        self.bonded = properties["Bonded"]?.bool ?? properties["Paired"]?.bool ?? false
    }

    /// An RSSI as a signal strength, or nil when it is none: bluetoothd shows no RSSI as 0
    /// (src/device.c: "rssi == 0" is none), and 127 is HCI's "not available" (what
    /// virtual controllers report); no receiver reports a signal above +20 dBm.
    public static func usableRSSI(_ raw: Int16?) -> Int16? {
        raw.flatMap { $0 == 0 || $0 > 20 ? nil : $0 }
    }

    /// Whether the device advertises (or, once resolved, offers) a service.
    public func advertises(_ uuid: BluetoothUUID) -> Bool { uuids.contains(uuid) }

    /// Whether a link to the device is up: `Connected`, or resolved services (bluetoothd
    /// sets only `ServicesResolved` when it finds a link already up that it did not make).
    public var hasLink: Bool { connected || servicesResolved }
}

/// `org.bluez.GattCharacteristic1`, as far as blefleet needs it.
public struct BlueZCharacteristic: Sendable, Hashable {
    public let path: String
    public let uuid: BluetoothUUID?
    public let servicePath: String
    public let serviceUUID: BluetoothUUID?
    public let flags: [String]
    public let notifying: Bool
    /// The cached value BlueZ last read or was notified of.
    public let value: [UInt8]?

    public init(path: String, properties: BlueZObjectTree.Properties, serviceUUID: BluetoothUUID?) {
        self.path = path
        self.uuid = properties["UUID"]?.string.flatMap(BluetoothUUID.init)
        self.servicePath = properties["Service"]?.string ?? ""
        self.serviceUUID = serviceUUID
        self.flags = (properties["Flags"]?.array ?? []).compactMap(\.string)
        self.notifying = properties["Notifying"]?.bool ?? false
        self.value = properties["Value"]?.bytes
    }
}
