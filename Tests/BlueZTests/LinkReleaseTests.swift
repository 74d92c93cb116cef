@testable import BlueZ
import DBus
import Logging
import Synchronization
import Testing

/// A device's link and who took it down: bluetoothd (`Device1.Disconnect`) or the kernel
/// (the management interface's Disconnect), which may say yes and keep the link.
final class ReleaseBus: BlueZBus, ControllerManagement {
    static let adapter = "/org/bluez/hci0"
    static let path = "/org/bluez/hci0/dev_CA_FE_00_00_00_01"

    let calls = Mutex<[String]>([])
    /// Whether the kernel's disconnect takes the link (else it answers success and keeps it).
    let kernelTakes: Bool
    let resolved: Bool
    private let mirror = Mutex<BlueZObjectMirror?>(nil)

    init(resolved: Bool, kernelTakes: Bool = true) {
        self.resolved = resolved
        self.kernelTakes = kernelTakes
    }

    var made: [String] { calls.withLock { $0 } }

    func run(mirror: BlueZObjectMirror) async throws {
        self.mirror.withLock { $0 = mirror }
        await mirror.load(
            [Self.path: [BlueZInterfaces.device: [
                "Address": .string("CA:FE:00:00:00:01"), "AddressType": .string("random"), "Adapter": .objectPath(Self.adapter),
                "Connected": .boolean(true), "ServicesResolved": .boolean(resolved),
            ]]], owner: ":1.1")
        try await Task.sleep(for: .seconds(3600))
    }

    func close() {}

    func call(path: String, interface: String, member: String, arguments: [DBusValue], timeout: Duration) async throws
        -> [DBusValue]
    {
        calls.withLock { $0.append("Device1.\(member)") }
        if member == "Disconnect" { await drop() }
        return []
    }

    func disconnect(controller index: UInt16, address: String, type: ManagementInterface.AddressType, timeout: Duration)
        async throws(ManagementInterface.Failure)
    {
        calls.withLock { $0.append("mgmt.Disconnect") }
        if kernelTakes { await drop() }
    }

    private func drop() async {
        await mirror.withLock { $0 }?.apply(.propertiesChanged(
            path: Self.path, interface: BlueZInterfaces.device,
            changed: ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], invalidated: []))
    }

    func setPowered(controller index: UInt16, _ on: Bool, timeout: Duration) async throws(ManagementInterface.Failure) {}
    func closeController(_ index: UInt16, timeout: Duration) async throws(ManagementInterface.Failure) {}
    func connectionRSSI(controller index: UInt16, address: String, type: ManagementInterface.AddressType, timeout: Duration)
        async throws(ManagementInterface.Failure) -> Int?
    { nil }
    func readLocalClock(controller index: UInt16, timeout: Duration) async throws(ManagementInterface.Failure)
        -> (status: UInt8, took: Duration)
    { (0, .zero) }
}

@Suite("A link is released the way bluetoothd survives, and a release that did not take is asked again")
struct LinkReleaseTests {
    func release(_ bus: ReleaseBus, timeout: Duration = .seconds(5)) async throws -> Duration {
        let client = BlueZClient(bus: bus, management: bus, logger: Logger(label: "test"))
        let running = Task { try await client.run() }
        defer { running.cancel() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        let device = try #require(await client.mirror.tree.device(at: ReleaseBus.path))
        let start = ContinuousClock.now
        try await client.disconnect(device, timeout: timeout)
        #expect(await client.mirror.tree.hasLink(at: ReleaseBus.path) == false)
        return start.duration(to: .now)
    }

    @Test("A link bluetoothd is done with goes through the kernel alone")
    func resolvedLinkThroughTheKernel() async throws {
        let bus = ReleaseBus(resolved: true)
        _ = try await release(bus)
        #expect(bus.made == ["mgmt.Disconnect"])
    }

    @Test("A link bluetoothd is still setting up goes through Device1.Disconnect, never from under it")
    func linkBeingSetUpThroughBlueZ() async throws {
        let bus = ReleaseBus(resolved: false)
        _ = try await release(bus)
        #expect(bus.made == ["Device1.Disconnect"])
    }

    @Test("The kernel said yes and kept the link: BlueZ is asked after the grace, within the call's time")
    func keptLinkAskedOfBlueZ() async throws {
        let bus = ReleaseBus(resolved: true, kernelTakes: false)
        let took = try await release(bus, timeout: .seconds(10))
        #expect(bus.made == ["mgmt.Disconnect", "Device1.Disconnect"])
        #expect(took >= BlueZClient.kernelReleaseGrace && took < .seconds(10))
    }
}
