import DBus
import Testing

@testable import BlueZ

/// A connected device's GATT objects as BlueZ exports them, read by handle as a GATT client
/// (bleak through blefleet) needs them; and an advertisement as `Device1` holds it.
@Suite struct BlueZGATTTreeTests {
    static let device = "/org/bluez/hci0/dev_CA_FE_00_00_00_03"

    static func object(_ interface: String, _ properties: [String: DBusValue]) -> [String: BlueZObjectTree.Properties] {
        [interface: properties]
    }

    static let tree = BlueZObjectTree(objects: [
        device: object(BlueZInterfaces.device, ["Address": .string("CA:FE:00:00:00:03"), "Connected": .boolean(true)]),
        // Another device's service: not this one's.
        "/org/bluez/hci0/dev_CA_FE_00_00_00_04/service0010": object(
            BlueZInterfaces.gattService, ["UUID": .string("0000180f-0000-1000-8000-00805f9b34fb"),
                                          "Device": .objectPath("/org/bluez/hci0/dev_CA_FE_00_00_00_04")]),
        "\(device)/service001e": object(
            BlueZInterfaces.gattService, ["UUID": .string("d888a9c2-f3cc-11ed-a05b-0242ac120003"),
                                          "Device": .objectPath(device), "Primary": .boolean(true)]),
        "\(device)/service000a": object(
            BlueZInterfaces.gattService, ["UUID": .string("cd48409a-f3cc-11ed-a05b-0242ac120003"),
                                          "Device": .objectPath(device), "Primary": .boolean(true)]),
        "\(device)/service001e/char001f": object(
            BlueZInterfaces.gattCharacteristic, ["UUID": .string("d888a9c3-f3cc-11ed-a05b-0242ac120003"),
                                                 "Service": .objectPath("\(device)/service001e"),
                                                 "Flags": .array(elementSignature: "s", [.string("read"), .string("notify")]),
                                                 "MTU": .uint16(247)]),
        "\(device)/service001e/char001f/desc0021": object(
            BlueZInterfaces.gattDescriptor, ["UUID": .string("00002902-0000-1000-8000-00805f9b34fb"),
                                             "Characteristic": .objectPath("\(device)/service001e/char001f")]),
        "\(device)/service000a/char000b": object(
            BlueZInterfaces.gattCharacteristic, ["UUID": .string("cd48409b-f3cc-11ed-a05b-0242ac120003"),
                                                 "Service": .objectPath("\(device)/service000a"),
                                                 "Flags": .array(elementSignature: "s", [.string("write")])]),
    ])

    @Test func handlesComeFromThePathsAsBlueZAndBleakNumberThem() {
        #expect(BlueZObjectTree.handle(ofGATTPath: "\(Self.device)/service001e") == 0x1e)
        #expect(BlueZObjectTree.handle(ofGATTPath: "\(Self.device)/service001e/char001f") == 0x1f)
        #expect(BlueZObjectTree.handle(ofGATTPath: "\(Self.device)/service001e/char001f/desc0021") == 0x21)
        #expect(BlueZObjectTree.handle(ofGATTPath: Self.device) == nil)
        #expect(BlueZObjectTree.handle(ofGATTPath: "\(Self.device)/charzz") == nil)
    }

    @Test func theServicesOfOneDeviceInHandleOrderWithTheirCharacteristicsAndDescriptors() {
        let services = Self.tree.gattServices(device: DevicePath(Self.device))
        #expect(services.map(\.handle) == [0x0a, 0x1e])
        #expect(services.map { $0.characteristics.map(\.handle) } == [[0x0b], [0x1f]])
        let temperature = services[1].characteristics[0]
        #expect(temperature.flags == ["read", "notify"])
        #expect(temperature.mtu == 247)
        #expect(temperature.descriptors.map(\.handle) == [0x21])
        #expect(temperature.descriptors.first?.uuid == BluetoothUUID("2902"))
    }

    @Test func anAttributeIsFoundByHandleAsACharacteristicFirstThenADescriptor() {
        #expect(Self.tree.gattAttribute(device: DevicePath(Self.device), handle: 0x1f)?.kind == .characteristic)
        #expect(Self.tree.gattAttribute(device: DevicePath(Self.device), handle: 0x1f, descriptor: true) == nil)
        let descriptor = Self.tree.gattAttribute(device: DevicePath(Self.device), handle: 0x21)
        #expect(descriptor?.kind == .descriptor)
        #expect(descriptor?.interface == BlueZInterfaces.gattDescriptor)
        #expect(Self.tree.gattAttribute(device: DevicePath(Self.device), handle: 0x10) == nil, "another device's handle")
    }

    @Test func anAdvertisementCarriesManufacturerAndServiceDataAndTxPower() throws {
        let path = "/org/bluez/hci1/dev_F0_0D_00_00_00_09"
        let tree = BlueZObjectTree(objects: [
            path: Self.object(BlueZInterfaces.device, [
                "Address": .string("F0:0D:00:00:00:09"), "Adapter": .objectPath("/org/bluez/hci1"), "RSSI": .int16(-61),
                "TxPower": .int16(4), "Name": .string("thermo"),
                "ManufacturerData": .dictionary(
                    keySignature: "q", valueSignature: "v",
                    [DBusDictEntry(key: .uint16(76), value: .variant(.bytes([0x02, 0x15])))]),
                "ServiceData": .dictionary(
                    keySignature: "s", valueSignature: "v",
                    [DBusDictEntry(key: .string("0000180f-0000-1000-8000-00805f9b34fb"), value: .variant(.bytes([0x64])))]),
            ])
        ])
        let advertisement = try #require(tree.advertisement(at: DevicePath(path)))
        #expect(advertisement.device.rssi == -61)
        #expect(advertisement.txPower == 4)
        #expect(advertisement.manufacturerData == [76: [0x02, 0x15]])
        #expect(advertisement.serviceData == ["0000180f-0000-1000-8000-00805f9b34fb": [0x64]])
    }
}
