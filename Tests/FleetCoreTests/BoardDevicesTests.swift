import BlueZ
import DBus
import Testing

@testable import FleetCore

/// A board's device objects as BlueZ reports them, and what a report says of its link: what
/// the board's actor feeds its state machine, checked without BlueZ.
@Suite struct BoardDevicesTests {
    static let hci0: AdapterPath = "/org/bluez/hci0"
    static let hci1: AdapterPath = "/org/bluez/hci1"

    static func device(_ adapter: AdapterPath, connected: Bool = false, resolved: Bool = false, rssi: Int16? = -60) -> BlueZDevice {
        var properties: [String: DBusValue] = [
            "Adapter": .objectPath(adapter.rawValue), "Address": .string("CA:FE:00:00:00:01"),
            "Connected": .boolean(connected), "ServicesResolved": .boolean(resolved),
        ]
        if let rssi { properties["RSSI"] = .int16(rssi) }
        return BlueZDevice(path: BlueZDevice.path(adapter: adapter, address: "CA:FE:00:00:00:01"), properties: properties)
    }

    @Test func aNewObjectOrAnAdvertisementIsTheBoardHeardAndALinkChangeIsNot() {
        var devices = BoardDevices([])
        let heard = [
            devices.report(Self.device(Self.hci0), changed: [.connected]),  // new on hci0
            devices.report(Self.device(Self.hci0, connected: true), changed: [.connected]),
            devices.report(Self.device(Self.hci0), changed: [.rssi]),
            devices.report(Self.device(Self.hci0), changed: [.manufacturerData]),
        ]
        #expect(heard == [true, false, true, true])
        #expect(devices[Self.hci0]?.connected == false)
        #expect(devices[Self.hci1] == nil)
    }

    @Test func onlyTheLinksAdapterSaysTheLinkIsDownAndAnotherAdaptersLinkIsAStray() {
        let change: Set<BlueZDevice.Property> = [.connected]
        #expect(BoardDevices.link(of: Self.device(Self.hci0), changed: change, linkAdapter: Self.hci0) == .down)
        #expect(BoardDevices.link(of: Self.device(Self.hci1), changed: change, linkAdapter: Self.hci0) == nil)
        #expect(BoardDevices.link(of: Self.device(Self.hci1, connected: true), changed: change, linkAdapter: Self.hci0) == .stray)
        #expect(
            BoardDevices.link(of: Self.device(Self.hci0, connected: true, resolved: true), changed: [.servicesResolved], linkAdapter: Self.hci0)
                == .up(resolved: true))
        // No link of its own: a link BlueZ shows is adopted; none, nothing to say.
        #expect(BoardDevices.link(of: Self.device(Self.hci1, connected: true), changed: change, linkAdapter: nil) == .up(resolved: false))
        #expect(BoardDevices.link(of: Self.device(Self.hci1), changed: change, linkAdapter: nil) == nil)
        // An advertisement says nothing of the link.
        #expect(BoardDevices.link(of: Self.device(Self.hci0), changed: [.rssi], linkAdapter: Self.hci0) == nil)
    }

    @Test func theAdapterShownIsTheLinksElseTheOneThatHearsItBest() {
        let devices = BoardDevices([Self.device(Self.hci0), Self.device(Self.hci1)])
        #expect(devices.shown(link: Self.hci0, rssi: [Self.hci1: -40, Self.hci0: -80]) == Self.hci0)
        #expect(devices.shown(link: nil, rssi: [Self.hci1: -40, Self.hci0: -80]) == Self.hci1)
        // An adapter that no longer knows it is not shown for its last RSSI.
        #expect(devices.shown(link: nil, rssi: ["/org/bluez/hci2": -30]) == Self.hci0)
    }

    @Test func theLinkedDeviceIsFoundWhereBlueZShowsTheLinkNow() {
        var devices = BoardDevices([Self.device(Self.hci0), Self.device(Self.hci1)])
        let linked = Self.device(Self.hci1, connected: true)
        let tree = BlueZObjectTree(objects: [
            Self.device(Self.hci0).path: [BlueZInterfaces.device: ["Adapter": .objectPath(Self.hci0.rawValue), "Connected": .boolean(false)]],
            linked.path: [BlueZInterfaces.device: ["Adapter": .objectPath(Self.hci1.rawValue), "Connected": .boolean(true)]],
        ])
        let found = devices.linked(in: tree, preferring: Self.hci0)
        #expect(found?.adapterPath == Self.hci1)
        #expect(devices[Self.hci1]?.connected == true)
        #expect(devices.adapters(notIn: [Self.hci1]) == [Self.hci0])
        #expect(devices.known(besides: Self.hci0))
        let removed = [devices.remove(adapter: Self.hci0), devices.remove(adapter: Self.hci0)]
        #expect(removed == [true, false])
        #expect(!devices.known(besides: Self.hci1))
        let cleared = [devices.removeAll(), devices.removeAll()]
        #expect(cleared == [true, false])
    }
}
