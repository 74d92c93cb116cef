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
        return BlueZDevice(path: DevicePath(adapter: adapter, address: "CA:FE:00:00:00:01").rawValue, properties: properties)
    }

    static let t0 = ContinuousClock.now
    static func at(_ seconds: Int) -> ContinuousClock.Instant { t0 + .seconds(seconds) }

    @Test func aNewObjectOrAnAdvertisementIsTheBoardHeardAndALinkChangeIsNot() {
        var devices = BoardDevices([])
        let heard = [
            devices.report(Self.device(Self.hci0), changed: [.connected], now: Self.at(1)),  // new on hci0
            devices.report(Self.device(Self.hci0, connected: true), changed: [.connected], now: Self.at(2)),
            devices.report(Self.device(Self.hci0), changed: [.rssi], now: Self.at(3)),
            devices.report(Self.device(Self.hci0), changed: [.manufacturerData], now: Self.at(4)),
        ]
        #expect(heard == [true, false, true, true])
        #expect(devices[Self.hci0]?.connected == false)
        #expect(devices[Self.hci1] == nil)
        #expect(devices.heardAt == [Self.hci0: Self.at(4)])
    }

    /// Each adapter's device, signal and last hearing of the board are one entry: an adapter
    /// that forgot the board (its device object went) is neither heard nor placed on for
    /// what it reported before, and one whose device the board was not told of yet records
    /// nothing until its report.
    @Test func anAdaptersSignalAndHearingGoWithItsDevice() {
        var devices = BoardDevices([Self.device(Self.hci0, rssi: -70)])
        #expect(devices.rssi == [Self.hci0: -70])
        let unknown = devices.advertised(rssi: -40, through: Self.hci1, at: Self.at(1))
        let known = devices.advertised(rssi: -65, through: Self.hci0, at: Self.at(2))
        #expect(!unknown && known)
        _ = devices.report(Self.device(Self.hci1, rssi: -50), changed: [.rssi], now: Self.at(3))
        #expect(devices.rssi == [Self.hci0: -65, Self.hci1: -50])
        #expect(devices.heardAt == [Self.hci0: Self.at(2), Self.hci1: Self.at(3)])
        // A link came up: BlueZ shows no RSSI; the last one heard is kept, and no hearing.
        _ = devices.report(Self.device(Self.hci1, connected: true, rssi: nil), changed: [.connected], now: Self.at(4))
        #expect(devices.rssi[Self.hci1] == -50 && devices.heardAt[Self.hci1] == Self.at(3))
        let removed = devices.remove(adapter: Self.hci1)
        #expect(removed)
        #expect(devices.rssi == [Self.hci0: -65] && devices.heardAt == [Self.hci0: Self.at(2)] && devices.bestRSSI == -65)
        let cleared = devices.removeAll()
        #expect(cleared)
        #expect(devices.rssi.isEmpty && devices.heardAt.isEmpty && devices.bestRSSI == nil)
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
        let devices = BoardDevices([Self.device(Self.hci0, rssi: -80), Self.device(Self.hci1, rssi: -40)])
        #expect(devices.shown(link: Self.hci0) == Self.hci0)
        #expect(devices.shown(link: nil) == Self.hci1)
        #expect(BoardDevices([Self.device(Self.hci1, rssi: nil), Self.device(Self.hci0, rssi: nil)]).shown(link: nil) == Self.hci0)
    }

    @Test func theLinkedDeviceIsFoundWhereBlueZShowsTheLinkNow() {
        var devices = BoardDevices([Self.device(Self.hci0), Self.device(Self.hci1)])
        let linked = Self.device(Self.hci1, connected: true)
        let tree = BlueZObjectTree(objects: [
            Self.device(Self.hci0).path.rawValue: [BlueZInterfaces.device: ["Adapter": .objectPath(Self.hci0.rawValue), "Connected": .boolean(false)]],
            linked.path.rawValue: [BlueZInterfaces.device: ["Adapter": .objectPath(Self.hci1.rawValue), "Connected": .boolean(true)]],
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
