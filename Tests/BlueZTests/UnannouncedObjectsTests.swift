@testable import BlueZ
import DBus
import Logging
import Synchronization
import Testing

/// bluetoothd announces each object from an idle callback of its own: a characteristic that
/// changed as the discovery ended is announced after the device's `ServicesResolved`. A
/// connect hands its caller the device's every object all the same.
@Suite struct UnannouncedObjectsTests {
    final class LateAnnouncingBus: BlueZBus {
        static let adapter = "/org/bluez/hci0"
        static let device = "/org/bluez/hci0/dev_CA_FE_00_00_00_01"
        static let service = device + "/service0010"
        static let characteristic = service + "/char0011"
        static let temperature = "d888a9c3-f3cc-11ed-a05b-0242ac120003"
        let mirror = Mutex<BlueZObjectMirror?>(nil)
        let calls = Mutex<[String]>([])

        static var serviceObject: [String: BlueZObjectTree.Properties] {
            [BlueZInterfaces.gattService: [
                "UUID": .string("d888a9c2-f3cc-11ed-a05b-0242ac120003"), "Device": .objectPath(device), "Primary": .boolean(true),
            ]]
        }
        static var characteristicObject: [String: BlueZObjectTree.Properties] {
            [BlueZInterfaces.gattCharacteristic: [
                "UUID": .string(temperature), "Service": .objectPath(service),
                "Flags": .array(elementSignature: "s", [.string("read"), .string("notify")]),
            ]]
        }

        func run(mirror: BlueZObjectMirror) async throws {
            self.mirror.withLock { $0 = mirror }
            await mirror.load(
                [Self.device: [BlueZInterfaces.device: [
                    "Address": .string("CA:FE:00:00:00:01"), "AddressType": .string("random"),
                    "Adapter": .objectPath(Self.adapter), "Connected": .boolean(false), "ServicesResolved": .boolean(false),
                ]]], owner: ":1.1")
            try await Task.sleep(for: .seconds(3600))
        }

        func close() {}

        func call(path: String, interface: String, member: String, arguments: [DBusValue], timeout: Duration) async throws
            -> [DBusValue]
        {
            calls.withLock { $0.append(member) }
            guard let mirror = mirror.withLock({ $0 }) else { return [] }
            switch member {
            case "Connect":
                // The service is announced, then the device resolved; its characteristic's
                // announcement is still to come.
                await mirror.apply(.propertiesChanged(
                    path: Self.device, interface: BlueZInterfaces.device, changed: ["Connected": .boolean(true)], invalidated: []))
                await mirror.apply(.interfacesAdded(path: Self.service, interfaces: Self.serviceObject))
                await mirror.apply(.propertiesChanged(
                    path: Self.device, interface: BlueZInterfaces.device, changed: ["ServicesResolved": .boolean(true)],
                    invalidated: []))
                return []
            case "GetManagedObjects":
                let device: [String: BlueZObjectTree.Properties] = await mirror.tree.objects[Self.device] ?? [:]
                let objects: [(String, [String: BlueZObjectTree.Properties])] = [
                    (Self.device, device), (Self.service, Self.serviceObject), (Self.characteristic, Self.characteristicObject),
                ]
                return [.dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", objects.map { path, interfaces in
                    DBusDictEntry(key: .objectPath(path), value: .dictionary(
                        keySignature: "s", valueSignature: "a{sv}", interfaces.map { name, properties in
                            DBusDictEntry(key: .string(name), value: .dictionary(
                                keySignature: "s", valueSignature: "v",
                                properties.map { DBusDictEntry(key: .string($0.key), value: .variant($0.value)) }))
                        }))
                })]
            default:
                return []
            }
        }
    }

    @Test func aConnectHandsOverEveryObjectBluezMadeAlsoOnesNotAnnouncedYet() async throws {
        let bus = LateAnnouncingBus()
        let client = BlueZClient(bus: bus, logger: Logger(label: "test"))
        let running = Task { try await client.run() }
        defer { running.cancel() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        let device = try #require(await client.device(at: DevicePath(LateAnnouncingBus.device)))
        try await client.connect(device, timeout: .seconds(10))
        let characteristics = await client.mirror.tree.gattServices(device: DevicePath(LateAnnouncingBus.device)).flatMap(\.characteristics)
        #expect(characteristics.compactMap(\.uuid).contains(BluetoothUUID(LateAnnouncingBus.temperature)))
        // What the mirror had stays as its signals said.
        #expect(await client.mirror.tree.properties(LateAnnouncingBus.device, BlueZInterfaces.device)?["ServicesResolved"] == .boolean(true))
    }
}
