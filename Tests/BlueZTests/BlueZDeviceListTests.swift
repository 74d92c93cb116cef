import DBus
import Testing

@testable import BlueZ

/// An adapter's devices as the fleet reads them from the mirror: only that adapter's, in path
/// order, and (for the slots) only those with a link up, whether Connected or ServicesResolved
/// says so.
@Suite struct BlueZDeviceListTests {
    static func device(_ adapter: String, _ suffix: String, connected: Bool = false, resolved: Bool = false)
        -> (String, [String: BlueZObjectTree.Properties])
    {
        ("/org/bluez/\(adapter)/dev_CA_FE_00_00_00_\(suffix)", [BlueZInterfaces.device: [
            "Address": .string("CA:FE:00:00:00:\(suffix)"), "Adapter": .objectPath("/org/bluez/\(adapter)"),
            "Connected": .boolean(connected), "ServicesResolved": .boolean(resolved),
            "UUIDs": .array(elementSignature: "s", [.string("cd48409a-f3cc-11ed-a05b-0242ac120003"), .string("180F")]),
        ]])
    }

    static let tree = BlueZObjectTree(objects: Dictionary(uniqueKeysWithValues: [
        device("hci0", "03", connected: true),
        device("hci0", "01"),
        device("hci0", "02", resolved: true),
        device("hci1", "04", connected: true),
        ("/org/bluez/hci0", [BlueZInterfaces.adapter: ["Address": .string("00:AA:00:00:00:00")]]),
    ]))

    @Test func anAdaptersDevicesAreItsOwnInPathOrder() {
        #expect(Self.tree.devices(onAdapter: "/org/bluez/hci0").map(\.address) == ["CA:FE:00:00:00:01", "CA:FE:00:00:00:02", "CA:FE:00:00:00:03"])
        #expect(Self.tree.devices(onAdapter: "/org/bluez/hci1").map(\.address) == ["CA:FE:00:00:00:04"])
        #expect(Self.tree.devices(onAdapter: "/org/bluez/hci2").isEmpty)
        #expect(Self.tree.devices(onAdapter: "/org/bluez/hci0").first?.uuids == [
            BluetoothUUID("cd48409a-f3cc-11ed-a05b-0242ac120003")!, BluetoothUUID("180f")!])
    }

    @Test func theLinkedDevicesAreThoseConnectedOrResolved() {
        #expect(Self.tree.linkedDevices(onAdapter: "/org/bluez/hci0").map(\.address) == ["CA:FE:00:00:00:02", "CA:FE:00:00:00:03"])
        #expect(Self.tree.linkedDevices(onAdapter: "/org/bluez/hci0") == Self.tree.devices(onAdapter: "/org/bluez/hci0").filter(\.hasLink))
        #expect(Self.tree.linkedDevices(onAdapter: "/org/bluez/hci1").map(\.address) == ["CA:FE:00:00:00:04"])
        #expect(Self.tree.linkedAddresses(onAdapter: "/org/bluez/hci0") == Self.tree.linkedDevices(onAdapter: "/org/bluez/hci0").map(\.address))
    }

    @Test func oneDeviceIsFoundByItsAdapterAndAddressInAnyCase() {
        #expect(Self.tree.device(onAdapter: "/org/bluez/hci0", address: "ca:fe:00:00:00:02")?.path == "/org/bluez/hci0/dev_CA_FE_00_00_00_02")
        #expect(Self.tree.device(onAdapter: "/org/bluez/hci1", address: "CA:FE:00:00:00:04")?.hasLink == true)
        #expect(Self.tree.device(onAdapter: "/org/bluez/hci1", address: "CA:FE:00:00:00:02") == nil)
    }

    /// Devices and their GATT objects come and go as BlueZ's signals say: what is asked of an
    /// adapter or a device follows (its objects are found under it, not by a full scan).
    @Test func devicesAndCharacteristicsFollowObjectsAddedAndRemoved() {
        var tree = Self.tree
        let (path, device) = Self.device("hci1", "05", connected: true)
        tree.set(device, at: path)
        let service = path + "/service000a"
        let characteristic = service + "/char000b"
        let uuid = "cd48409b-f3cc-11ed-a05b-0242ac120003"
        tree.set([BlueZInterfaces.gattService: ["UUID": .string("cd48409a-f3cc-11ed-a05b-0242ac120003"), "Device": .objectPath(path)]], at: service)
        tree.set([BlueZInterfaces.gattCharacteristic: ["UUID": .string(uuid), "Service": .objectPath(service)]], at: characteristic)
        #expect(tree.linkedDevices(onAdapter: "/org/bluez/hci1").map(\.address) == ["CA:FE:00:00:00:04", "CA:FE:00:00:00:05"])
        let found = tree.characteristic(
            device: DevicePath(path), service: BluetoothUUID("cd48409a-f3cc-11ed-a05b-0242ac120003")!, characteristic: BluetoothUUID(uuid)!)
        #expect(found?.path == characteristic)
        #expect(tree.characteristics(device: DevicePath(path)).map(\.path) == [characteristic])
        // Another device's GATT objects are not this one's.
        #expect(tree.characteristics(device: "/org/bluez/hci1/dev_CA_FE_00_00_00_04").isEmpty)

        tree.change(path, BlueZInterfaces.device, ["Connected": .boolean(false)], invalidated: [])
        #expect(tree.linkedDevices(onAdapter: "/org/bluez/hci1").map(\.address) == ["CA:FE:00:00:00:04"])
        tree.set(nil, at: characteristic)
        tree.set(nil, at: service)
        #expect(tree.characteristics(device: DevicePath(path)).isEmpty)
        tree.set(nil, at: path)
        #expect(tree.devices(onAdapter: "/org/bluez/hci1").map(\.address) == ["CA:FE:00:00:00:04"])
        #expect(tree.objects[path] == nil)
        #expect(DevicePath(adapter: "/org/bluez/hci1", address: "CA:FE:00:00:00:05") == DevicePath(path))
    }

    /// A wait that watches a device is told of changes to the device and its GATT objects only.
    @Test func aWatchedPathCoversItsObjectAndTheObjectsUnderIt() {
        let device = "/org/bluez/hci0/dev_CA_FE_00_00_00_01"
        #expect(BlueZObjectMirror.path(device, isAtOrUnder: device))
        #expect(BlueZObjectMirror.path(device + "/service000a/char000b", isAtOrUnder: device))
        #expect(!BlueZObjectMirror.path("/org/bluez/hci0/dev_CA_FE_00_00_00_01X", isAtOrUnder: device))
        #expect(!BlueZObjectMirror.path("/org/bluez/hci0", isAtOrUnder: device))
        #expect(!BlueZObjectMirror.path("/org/bluez/hci1/dev_CA_FE_00_00_00_01", isAtOrUnder: device))
    }
}
