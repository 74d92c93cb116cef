/// An adapter, as BlueZ names it: its object path, `/org/bluez/hci0`. The one way the fleet
/// names an adapter (its links, its ledger, its devices); its interface name (`hci0`, what
/// the journal, the status and the wire say) is ``name``, derived here alone.
public struct AdapterPath: BlueZObjectPath {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// The interface name, e.g. `hci0` (the path's last component). Read by bytes (an object
    /// path is ASCII): it is asked for on every status call and every connect.
    public var name: String {
        let bytes = rawValue.utf8
        guard let last = bytes.lastIndex(where: { $0 != UInt8(ascii: "/") }) else { return rawValue }
        let first = bytes[..<last].lastIndex(of: UInt8(ascii: "/")).map(bytes.index(after:)) ?? bytes.startIndex
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}

/// One kind of BlueZ object named by its D-Bus object path: a type per kind, so an adapter's
/// path is never taken for a device's; written as the path, ordered by it.
public protocol BlueZObjectPath: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The D-Bus object path.
    var rawValue: String { get }
    init(_ rawValue: String)
}

extension BlueZObjectPath {
    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String { rawValue }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// A device object of BlueZ, by its object path, under its adapter's
/// (`/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`): a board has one per adapter that knows it.
public struct DevicePath: BlueZObjectPath {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Where BlueZ puts the device of `address` on `adapter` (its path is made of its address).
    public init(adapter: AdapterPath, address: String) {
        self.init(
            adapter.rawValue + "/dev_"
                + String(decoding: address.utf8.map { $0 == UInt8(ascii: ":") ? UInt8(ascii: "_") : $0 }, as: UTF8.self))
    }

    /// The adapter the device object is under.
    public var adapter: AdapterPath { AdapterPath(BlueZObjectTree.parent(of: rawValue)) }
}

extension BlueZDevice {
    /// The name of one of `org.bluez.Device1`'s properties, as BlueZ reports their changes.
    public struct Property: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String

        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        public static let rssi = Property("RSSI")
        public static let connected = Property("Connected")
        public static let servicesResolved = Property("ServicesResolved")
        public static let name = Property("Name")
        public static let uuids = Property("UUIDs")
        public static let appearance = Property("Appearance")
        public static let manufacturerData = Property("ManufacturerData")
        public static let serviceData = Property("ServiceData")
        public static let txPower = Property("TxPower")
        public static let advertisingData = Property("AdvertisingData")
        public static let advertisingFlags = Property("AdvertisingFlags")

        /// Those that change only when an advertisement is heard: a change of nothing else
        /// says the device advertised again.
        public static let advertisement: Set<Property> = [
            .rssi, .manufacturerData, .serviceData, .txPower, .advertisingData, .advertisingFlags,
        ]
        /// Those that say whether a link is up (``BlueZDevice/hasLink``).
        public static let link: Set<Property> = [.connected, .servicesResolved]
    }
}

extension Set<BlueZDevice.Property> {
    /// The properties BlueZ reported changed, by their names.
    public init(named names: some Sequence<String>) {
        self.init(names.map(BlueZDevice.Property.init))
    }

    /// Whether these say the device advertised again (an advertisement's properties among them).
    public var sayAdvertised: Bool { !isDisjoint(with: BlueZDevice.Property.advertisement) }

    /// Whether these say something of a link (`Connected` or `ServicesResolved` among them).
    public var sayLink: Bool { !isDisjoint(with: BlueZDevice.Property.link) }
}
