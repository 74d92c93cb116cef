import DBus
import Logging
import Synchronization
import Testing

@testable import BlueZ

/// When the mirror last heard each device: what a new scan session is told of (the devices
/// heard, not every device BlueZ remembers). Time moves only when the test says.
@Suite struct MirrorHearingTests {
    final class StoppedClock: RadioClock {
        let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(_ duration: Duration) { instant.withLock { $0 = $0.advanced(by: duration) } }
        func sleep(until deadline: ContinuousClock.Instant) async throws { throw CancellationError() }
    }

    static let remembered = "/org/bluez/hci0/dev_CA_FE_00_00_00_01"
    static let heard = "/org/bluez/hci0/dev_CA_FE_00_00_00_02"

    static func device(_ path: String, rssi: Int16? = nil) -> [String: BlueZObjectTree.Properties] {
        var properties: BlueZObjectTree.Properties = ["Address": .string("CA:FE:00:00:00:0" + String(path.last!))]
        if let rssi { properties["RSSI"] = .int16(rssi) }
        return [BlueZInterfaces.device: properties]
    }

    @Test func onlyAdvertisementsCountAsHearingADevice() async {
        let clock = StoppedClock()
        let mirror = BlueZObjectMirror(logger: Logger(label: "test"), clock: clock)
        // What BlueZ remembered when the mirror loaded was not heard by it.
        await mirror.load([Self.remembered: Self.device(Self.remembered)], owner: ":1.1")
        #expect(await mirror.heardAt.isEmpty)
        let start = clock.now
        await mirror.apply(.interfacesAdded(path: Self.heard, interfaces: Self.device(Self.heard, rssi: -60)))
        #expect(await mirror.heardAt == [Self.heard: start])
        // A change that is not an advertisement (the link) is not a hearing; an RSSI is.
        clock.advance(.seconds(3))
        await mirror.apply(.propertiesChanged(
            path: Self.remembered, interface: BlueZInterfaces.device, changed: ["Connected": .boolean(true)], invalidated: []))
        #expect(await mirror.heardAt[Self.remembered] == nil)
        await mirror.apply(.propertiesChanged(
            path: Self.heard, interface: BlueZInterfaces.device, changed: ["RSSI": .int16(-58)], invalidated: []))
        #expect(await mirror.heardAt[Self.heard] == start.advanced(by: .seconds(3)))
        await mirror.apply(.propertiesChanged(
            path: Self.remembered, interface: BlueZInterfaces.device,
            changed: ["ManufacturerData": .array(elementSignature: "{qv}", [])], invalidated: []))
        #expect(await mirror.heardAt[Self.remembered] == start.advanced(by: .seconds(3)))
        // Removed, or BlueZ gone: nothing is heard any more.
        await mirror.apply(.interfacesRemoved(path: Self.heard, interfaces: [BlueZInterfaces.device]))
        #expect(await mirror.heardAt[Self.heard] == nil)
        await mirror.lose()
        #expect(await mirror.heardAt.isEmpty)
    }

    /// A device heard, then linked: BlueZ then shows no RSSI and the services it resolved, yet
    /// what the device said when last heard (what a scanner was told) is kept for it.
    @Test func whatADeviceSaidIsKeptThroughItsLink() async {
        let clock = StoppedClock()
        let mirror = BlueZObjectMirror(logger: Logger(label: "test"), clock: clock)
        await mirror.load([:], owner: ":1.1")
        let led = "cd48409a-f3cc-11ed-a05b-0242ac120003", sensor = "d888a9c2-f3cc-11ed-a05b-0242ac120003"
        var properties = Self.device(Self.heard, rssi: -61)
        properties[BlueZInterfaces.device]?["UUIDs"] = .array(elementSignature: "s", [.string(led)])
        await mirror.apply(.interfacesAdded(path: Self.heard, interfaces: properties))
        clock.advance(.seconds(1))
        await mirror.apply(.propertiesChanged(
            path: Self.heard, interface: BlueZInterfaces.device, changed: ["RSSI": .int16(-55)], invalidated: []))
        await mirror.apply(.propertiesChanged(
            path: Self.heard, interface: BlueZInterfaces.device,
            changed: [
                "Connected": .boolean(true), "ServicesResolved": .boolean(true),
                "UUIDs": .array(elementSignature: "s", [.string(led), .string(sensor)]),
            ],
            invalidated: ["RSSI"]))
        // Linked, an advertisement property BlueZ changes is a hearing, but not what it said.
        clock.advance(.seconds(1))
        await mirror.apply(.propertiesChanged(
            path: Self.heard, interface: BlueZInterfaces.device, changed: ["TxPower": .int16(4)], invalidated: []))
        let hearing = await mirror.hearings[Self.heard]
        #expect(hearing?.at == clock.now)
        #expect(hearing?.advertised["RSSI"] == .int16(-55))
        #expect(hearing?.advertised["UUIDs"] == .array(elementSignature: "s", [.string(led)]))
        #expect(hearing?.advertised["Connected"] == nil)
        // The link ends; BlueZ keeps the services it resolved among the UUIDs. Heard again,
        // the device says its signal anew, its advertised service as before.
        await mirror.apply(.propertiesChanged(
            path: Self.heard, interface: BlueZInterfaces.device,
            changed: ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], invalidated: []))
        await mirror.apply(.propertiesChanged(
            path: Self.heard, interface: BlueZInterfaces.device, changed: ["RSSI": .int16(-48)], invalidated: []))
        let again = await mirror.hearings[Self.heard]
        #expect(again?.advertised["RSSI"] == .int16(-48))
        #expect(again?.advertised["UUIDs"] == .array(elementSignature: "s", [.string(led)]))
    }

    /// BlueZ may report a device's advertised services after its first report of it: they
    /// are what it says until a link resolves its services.
    @Test func servicesReportedAfterTheFirstHearingAreWhatItAdvertises() async {
        let clock = StoppedClock()
        let mirror = BlueZObjectMirror(logger: Logger(label: "test"), clock: clock)
        await mirror.load([:], owner: ":1.1")
        let led: BlueZObjectTree.Properties = ["UUIDs": .array(elementSignature: "s", [.string("cd48409a-f3cc-11ed-a05b-0242ac120003")])]
        await mirror.apply(.interfacesAdded(path: Self.heard, interfaces: Self.device(Self.heard, rssi: -61)))
        await mirror.apply(.propertiesChanged(path: Self.heard, interface: BlueZInterfaces.device, changed: led, invalidated: []))
        #expect(await mirror.hearings[Self.heard]?.advertised["UUIDs"] == led["UUIDs"])
    }

    /// What BlueZ shows of a device with an RSSI when the mirror loads (heard in a discovery
    /// under way) is kept as what it said, not as a hearing of the mirror's; a linked one's
    /// (no advertisement now) is not.
    @Test func whatADeviceSaidBeforeTheMirrorLoadedIsKeptButNotAsAHearing() async {
        let clock = StoppedClock()
        let mirror = BlueZObjectMirror(logger: Logger(label: "test"), clock: clock)
        var linked = Self.device(Self.remembered, rssi: -70)
        linked[BlueZInterfaces.device]?["Connected"] = .boolean(true)
        await mirror.load([Self.heard: Self.device(Self.heard, rssi: -61), Self.remembered: linked], owner: ":1.1")
        #expect(await mirror.heardAt.isEmpty)
        #expect(await mirror.hearings[Self.heard]?.at == nil)
        #expect(await mirror.hearings[Self.heard]?.advertised["RSSI"] == .int16(-61))
        #expect(await mirror.hearings[Self.remembered] == nil)
    }
}
