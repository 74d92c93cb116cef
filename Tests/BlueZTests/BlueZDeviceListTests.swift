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
    }

    @Test func oneDeviceIsFoundByItsAdapterAndAddressInAnyCase() {
        #expect(Self.tree.device(onAdapter: "/org/bluez/hci0", address: "ca:fe:00:00:00:02")?.path == "/org/bluez/hci0/dev_CA_FE_00_00_00_02")
        #expect(Self.tree.device(onAdapter: "/org/bluez/hci1", address: "CA:FE:00:00:00:04")?.hasLink == true)
        #expect(Self.tree.device(onAdapter: "/org/bluez/hci1", address: "CA:FE:00:00:00:02") == nil)
    }
}
