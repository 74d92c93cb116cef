@testable import BlueZ
import DBus
import Logging
import Synchronization
import TestSupport
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
    /// Whether the link is up at the start (else a connect is pending: no link yet).
    let connected: Bool
    /// The link as bluetoothd shows it now.
    private let linkUp: Mutex<Bool>
    /// How long bluetoothd holds a link it is still setting up after `Device1.Disconnect`
    /// (its disconnect timer, `DISCONNECT_TIMER`).
    static let bluezHolds: Duration = .seconds(2)
    /// How long a `WriteValue` takes to be answered (nil: never).
    let writeTakes: Duration?
    private let mirror = Mutex<BlueZObjectMirror?>(nil)
    static let characteristic = path + "/service000a/char000b"

    /// How the kernel answers a question about the link (Get Connection Information): after
    /// this long, with this failure status (nil: an RSSI).
    let rssiAnswer: (after: Duration, status: UInt8?)
    /// The clock the kernel's answer takes its time on: moved by `rssiAnswer.after` when given
    /// (time a loaded machine cannot stretch), else the machine's time passes.
    let answerClock: ProbeClock?
    /// How long after a reset of the controller BlueZ shows the link down (nil: never).
    let resetDrops: Duration?

    /// `upAtBlueZ`: whether bluetoothd has the link (its `Connected`), when the mirror does
    /// not show it yet (default: as `connected` or `resolved` say).
    init(
        resolved: Bool, connected: Bool = true, upAtBlueZ: Bool? = nil, kernelTakes: Bool = true,
        writeTakes: Duration? = .milliseconds(20),
        rssiAnswer: (after: Duration, status: UInt8?) = (.zero, nil), answerClock: ProbeClock? = nil,
        resetDrops: Duration? = nil
    ) {
        self.resetDrops = resetDrops
        self.resolved = resolved
        self.connected = connected
        self.linkUp = Mutex(upAtBlueZ ?? (connected || resolved))
        self.kernelTakes = kernelTakes
        self.writeTakes = writeTakes
        self.rssiAnswer = rssiAnswer
        self.answerClock = answerClock
    }

    var made: [String] { calls.withLock { $0 } }

    func run(mirror: BlueZObjectMirror) async throws {
        self.mirror.withLock { $0 = mirror }
        await mirror.load(
            [Self.path: [BlueZInterfaces.device: [
                "Address": .string("CA:FE:00:00:00:01"), "AddressType": .string("random"), "Adapter": .objectPath(Self.adapter),
                "Connected": .boolean(connected), "ServicesResolved": .boolean(resolved),
            ]]], owner: ":1.1")
        try await Task.sleep(for: .seconds(3600))
    }

    func close() {}

    func call(path: String, interface: String, member: String, arguments: [DBusValue], timeout: Duration) async throws
        -> [DBusValue]
    {
        if member == "WriteValue" {
            calls.withLock { $0.append("WriteValue") }
            try await Task.sleep(for: writeTakes ?? .seconds(3600))
            calls.withLock { $0.append("WriteValue answered") }
            return []
        }
        if member == "Get" {
            calls.withLock { $0.append("Properties.Get") }
            return [.variant(.boolean(linkUp.withLock { $0 }))]
        }
        calls.withLock { $0.append("Device1.\(member)") }
        guard member == "Disconnect", linkUp.withLock({ $0 }) else { return [] }
        if await mirror.withLock({ $0 })?.tree.link(at: DevicePath(Self.path))?.servicesResolved == true {
            await drop()
            return []
        }
        // A link being set up: bluetoothd cancels its work on it and ends it when its timer
        // does, unless the link went before; it answers once the link is down.
        guard let mirror = mirror.withLock({ $0 }) else { return [] }
        let path = DevicePath(Self.path)
        do {
            try await mirror.wait(timeout: Self.bluezHolds, description: "the kernel took the link") {
                ($0.tree.hasLink(at: path) ?? false) ? .pending : .done(())
            }
        } catch {
            calls.withLock { $0.append("BlueZ: disconnect timer ended the link") }
            await drop()
        }
        return []
    }

    func disconnect(controller index: UInt16, address: String, type: ManagementInterface.AddressType, timeout: Duration)
        async throws(ManagementInterface.Failure)
    {
        calls.withLock { $0.append("mgmt.Disconnect") }
        if kernelTakes { await drop() }
    }

    /// The mirror is told what bluetoothd signalled: the link up (`Connected`).
    func signalUp() async {
        await mirror.withLock { $0 }?.apply(.propertiesChanged(
            path: Self.path, interface: BlueZInterfaces.device, changed: ["Connected": .boolean(true)], invalidated: []))
    }

    /// bluetoothd has resolved the link's services.
    func resolve() async {
        calls.withLock { $0.append("BlueZ: resolved") }
        await mirror.withLock { $0 }?.apply(.propertiesChanged(
            path: Self.path, interface: BlueZInterfaces.device, changed: ["ServicesResolved": .boolean(true)], invalidated: []))
    }

    private func drop() async {
        linkUp.withLock { $0 = false }
        await mirror.withLock { $0 }?.apply(.propertiesChanged(
            path: Self.path, interface: BlueZInterfaces.device,
            changed: ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], invalidated: []))
    }

    func setPowered(controller index: UInt16, _ on: Bool, timeout: Duration) async throws(ManagementInterface.Failure) {}
    func closeController(_ index: UInt16, timeout: Duration) async throws(ManagementInterface.Failure) {
        calls.withLock { $0.append("mgmt.close") }
        guard let resetDrops else { return }
        Task {
            try await Task.sleep(for: resetDrops)
            calls.withLock { $0.append("BlueZ: link down") }
            await drop()
        }
    }
    func connectionRSSI(controller index: UInt16, address: String, type: ManagementInterface.AddressType, timeout: Duration)
        async throws(ManagementInterface.Failure) -> Int?
    {
        if let answerClock {
            answerClock.advance(rssiAnswer.after)
        } else {
            try? await Task.sleep(for: rssiAnswer.after)
        }
        if let status = rssiAnswer.status { throw .status(status) }
        return -50
    }
    func readLocalClock(controller index: UInt16, timeout: Duration) async throws(ManagementInterface.Failure)
        -> (status: UInt8, took: Duration)
    { (0, .zero) }
}

@Suite("A link is released the way bluetoothd survives, and a release that did not take is asked again")
struct LinkReleaseTests {
    /// `writing`: a GATT write of the client's is under way on the device when it is released.
    /// `clock`: the client's (the machine's when nil).
    func release(
        _ bus: ReleaseBus, timeout: Duration = .seconds(5), writing: Bool = false, clock: (any RadioClock)? = nil
    ) async throws -> Duration {
        let client = BlueZClient(bus: bus, management: bus, clock: clock ?? MachineClock(), logger: Logger(label: "test"))
        let running = Task { try await client.run() }
        defer { running.cancel() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        let device = try #require(await client.mirror.tree.device(at: DevicePath(ReleaseBus.path)))
        var write: Task<Void, any Error>?
        defer { write?.cancel() }
        if writing {
            write = Task {
                _ = try await client.call(ReleaseBus.characteristic, BlueZInterfaces.gattCharacteristic, "WriteValue", timeout: .seconds(3600))
            }
            try await eventually("the write reached BlueZ", within: .seconds(10), every: .milliseconds(5)) {
                bus.made.contains("WriteValue")
            }
        }
        let start = ContinuousClock.now
        try await client.disconnect(device, timeout: timeout)
        #expect(await client.mirror.tree.hasLink(at: DevicePath(ReleaseBus.path)) == false)
        return start.duration(to: .now)
    }

    @Test("A link bluetoothd is done with goes through the kernel alone")
    func resolvedLinkThroughTheKernel() async throws {
        let bus = ReleaseBus(resolved: true)
        _ = try await release(bus)
        #expect(bus.made == ["mgmt.Disconnect"])
    }

    @Test("A link bluetoothd is still setting up and does not finish goes through Device1.Disconnect, never from under it")
    func linkBeingSetUpThroughBlueZ() async throws {
        let bus = ReleaseBus(resolved: false)
        let took = try await release(bus, timeout: .seconds(20))
        #expect(bus.made == ["Device1.Disconnect", "BlueZ: disconnect timer ended the link"])
        #expect(took >= BlueZClient.resolveWait)
    }

    /// Releases the bus's device and, once the release waits (`waiting` holds), tells the
    /// mirror what `meanwhile` makes bluetoothd do.
    func release(
        _ bus: ReleaseBus, once waiting: @escaping @Sendable (BlueZClient) async -> Bool, meanwhile: () async -> Void
    ) async throws {
        let client = BlueZClient(bus: bus, management: bus, clock: MachineClock(), logger: Logger(label: "test"))
        let running = Task { try await client.run() }
        defer { running.cancel() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        let device = try #require(await client.mirror.tree.device(at: DevicePath(ReleaseBus.path)))
        let release = Task { try await client.disconnect(device, timeout: .seconds(30)) }
        try await eventually("the release waits", within: .seconds(10), every: .milliseconds(5)) { await waiting(client) }
        await meanwhile()
        try await release.value
        #expect(await client.mirror.tree.hasLink(at: DevicePath(ReleaseBus.path)) == false)
    }

    @Test("A link whose services resolve while the release waits goes through the kernel once they have")
    func linkResolvedMeanwhileThroughTheKernel() async throws {
        let bus = ReleaseBus(resolved: false)
        // Two waits: the link's end, and its services (or its end) before the kernel is asked.
        try await release(bus, once: { await $0.mirror.waitsRegistered >= 2 && bus.made.isEmpty }) { await bus.resolve() }
        #expect(bus.made == ["BlueZ: resolved", "mgmt.Disconnect"])
    }

    @Test("A connect still pending is cancelled by BlueZ: no services to wait for")
    func pendingConnectThroughBlueZ() async throws {
        let bus = ReleaseBus(resolved: false, connected: false)
        _ = try await release(bus)
        #expect(bus.made == ["Properties.Get", "Device1.Disconnect"])
    }

    @Test("A link bluetoothd has but the mirror does not show yet is waited for, not taken for a pending connect")
    func linkNotShownYetIsWaitedFor() async throws {
        // A script killed as its link came up: the daemon abandons the connect before its
        // mirror has bluetoothd's signal. Device1.Disconnect would hold the link 2 s.
        let bus = ReleaseBus(resolved: false, connected: false, upAtBlueZ: true)
        try await release(bus, once: { await $0.mirror.waitsRegistered >= 2 && bus.made == ["Properties.Get"] }) {
            await bus.signalUp()
            await bus.resolve()
        }
        #expect(bus.made == ["Properties.Get", "BlueZ: resolved", "mgmt.Disconnect"])
    }

    @Test("A write of ours under way on the link is answered before the kernel takes the link")
    func writeUnderWayAnsweredFirst() async throws {
        // The write takes 300 ms: a release that did not wait for it would come first. The
        // client's clock stands still, so a starved test run cannot make the write outlast the
        // release's bound on the wait (the next test has that bound).
        let bus = ReleaseBus(resolved: true, writeTakes: .milliseconds(300))
        _ = try await release(bus, writing: true, clock: ProbeClock())
        #expect(bus.made == ["WriteValue", "WriteValue answered", "mgmt.Disconnect"])
    }

    @Test("A write that is never answered holds the release back only for a moment")
    func unansweredWriteBoundsTheWait() async throws {
        let bus = ReleaseBus(resolved: true, writeTakes: nil)
        let took = try await release(bus, writing: true)
        #expect(bus.made == ["WriteValue", "mgmt.Disconnect"])
        #expect(took >= BlueZClient.gattSettleLimit && took < BlueZClient.gattSettleLimit + .seconds(1))
    }

    @Test("The kernel said yes and kept the link: BlueZ is asked after the grace, within the call's time")
    func keptLinkAskedOfBlueZ() async throws {
        let bus = ReleaseBus(resolved: true, kernelTakes: false)
        let took = try await release(bus, timeout: .seconds(10))
        #expect(bus.made == ["mgmt.Disconnect", "Device1.Disconnect"])
        #expect(took >= BlueZClient.kernelReleaseGrace && took < .seconds(10))
    }
}

/// Issue 55: bluetoothd 5.66 died when a board connected through a controller the daemon had
/// just reset, before bluetoothd had taken the controller's old links down ("already
/// connected"); a reset is over once BlueZ shows them down.
@Suite struct ControllerResetTests {
    @Test func aResetIsOverOnceBlueZShowsTheOldLinksDown() async throws {
        let bus = ReleaseBus(resolved: true, resetDrops: .milliseconds(300))
        let client = BlueZClient(bus: bus, management: bus, logger: Logger(label: "test"))
        let running = Task { try await client.run() }
        defer { running.cancel() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        try await client.resetController(BlueZAdapter(path: ReleaseBus.adapter, properties: [:]))
        #expect(bus.made == ["mgmt.close", "BlueZ: link down"])
        #expect(await client.mirror.tree.linkedDevices(onAdapter: AdapterPath(ReleaseBus.adapter)).isEmpty)
    }
}

/// Time that stands still but for `advance`; its waits are the machine's (only the mirror's
/// load timeout waits on it here).
final class ProbeClock: RadioClock {
    private let offset = Mutex(Duration.zero)
    private let start = ContinuousClock.now
    var now: ContinuousClock.Instant { start.advanced(by: offset.withLock { $0 }) }
    func advance(_ duration: Duration) { offset.withLock { $0 += duration } }
    func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await Task.sleep(for: now.duration(to: deadline))
    }
}

/// Issue 52: the daemon asks each controller about one of its links every few seconds; one
/// that does not answer is stuck. Linux 6.1 tells that by failing the question after its HCI
/// command timeout (2 s), with a status that is not `timeout`.
@Suite struct LinkProbeTests {
    /// How long the kernel took is measured on this clock, so a test run that starves the
    /// machine cannot make an answer "at once" look like one after the command timeout.
    func probe(_ after: Duration, _ status: UInt8?) async throws -> Int? {
        let clock = ProbeClock()
        return try await probe(ReleaseBus(resolved: true, rssiAnswer: (after, status), answerClock: clock), clock: clock)
    }

    func probe(_ bus: ReleaseBus, clock: ProbeClock) async throws -> Int? {
        let client = BlueZClient(bus: bus, management: bus, clock: clock, logger: Logger(label: "test"))
        let running = Task { try await client.run() }
        defer { running.cancel() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        return try await client.probeLink(DevicePath(ReleaseBus.path))
    }

    @Test func anAnswerIsTheRSSI() async throws {
        #expect(try await probe(.zero, nil) == -50)
    }

    @Test func aFailureAfterTheKernelsCommandTimeoutIsAControllerThatDidNotAnswer() async throws {
        await #expect(throws: BlueZError.self) {
            _ = try await probe(.milliseconds(1600), 0x05)
        }
        do {
            _ = try await probe(.milliseconds(1600), 0x05)
        } catch BlueZError.timeout {
        } catch {
            Issue.record("not a timeout: \(error)")
        }
    }

    @Test func aFailureAtOnceIsTheKernelsAndTellsNothing() async throws {
        do {
            _ = try await probe(.zero, 0x05)
            Issue.record("no failure")
        } catch BlueZError.notAvailable {
        } catch {
            Issue.record("not 'nothing learned': \(error)")
        }
    }
}

/// bluetoothd 5.66 as it is when a connect is abandoned just as the controller made the link:
/// `Connect` waits, `Disconnect` finds no link yet and is answered at once, and the link
/// comes up after it all the same (the GATT server's listening ATT socket takes it) with the
/// device's services resolved: a link nobody holds, unless its client releases it.
final class LateLinkBus: BlueZBus {
    static let path = "/org/bluez/hci0/dev_CA_FE_00_00_00_02"
    let calls = Mutex<[String]>([])
    private let mirror = Mutex<BlueZObjectMirror?>(nil)
    var made: [String] { calls.withLock { $0 } }
    let lateLinkAfterDisconnect: Bool

    init(lateLinkAfterDisconnect: Bool = true) {
        self.lateLinkAfterDisconnect = lateLinkAfterDisconnect
    }

    func run(mirror: BlueZObjectMirror) async throws {
        self.mirror.withLock { $0 = mirror }
        await mirror.load(
            [Self.path: [BlueZInterfaces.device: [
                "Address": .string("CA:FE:00:00:00:02"), "AddressType": .string("random"),
                "Adapter": .objectPath("/org/bluez/hci0"), "Connected": .boolean(false), "ServicesResolved": .boolean(false),
            ]]], owner: ":1.1")
        try await Task.sleep(for: .seconds(3600))
    }

    func close() {}

    func call(path: String, interface: String, member: String, arguments: [DBusValue], timeout: Duration) async throws
        -> [DBusValue]
    {
        calls.withLock { $0.append("Device1.\(member)") }
        switch member {
        case "Connect" where made.filter({ $0 == "Device1.Connect" }).count > 1:
            await link(up: true)  // a connect after the abandoned one: the late link is its
        case "Connect":
            try await Task.sleep(for: .seconds(3600))  // until its caller gives up
        case "Disconnect" where !isUp.withLock({ $0 }):
            // No link yet: answered at once; the link comes up right after (unless the test
            // has a newer connect bring it up).
            if lateLinkAfterDisconnect { Task { await self.link(up: true) } }
        case "Disconnect":
            await link(up: false)
        default:
            break
        }
        return []
    }

    private let isUp = Mutex(false)

    func link(up: Bool) async {
        isUp.withLock { $0 = up }
        calls.withLock { $0.append(up ? "BlueZ: link up, resolved" : "BlueZ: link down") }
        await mirror.withLock { $0 }?.apply(.propertiesChanged(
            path: Self.path, interface: BlueZInterfaces.device,
            changed: ["Connected": .boolean(up), "ServicesResolved": .boolean(up)], invalidated: []))
    }
}

@Suite("A link that comes up after its connect was abandoned is not left to nobody")
struct AbandonedConnectTests {
    func abandonedConnect(_ bus: LateLinkBus) async throws -> BlueZClient {
        let client = BlueZClient(bus: bus, logger: Logger(label: "test"))
        Task { try await client.run() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        let device = try #require(await client.mirror.tree.device(at: DevicePath(LateLinkBus.path)))
        let connecting = Task { try await client.connect(device, timeout: .seconds(60)) }
        try await eventually("the connect reached BlueZ", within: .seconds(10), every: .milliseconds(5)) {
            bus.made.contains("Device1.Connect")
        }
        connecting.cancel()  // its client went
        _ = await connecting.result
        return client
    }

    @Test func itIsReleased() async throws {
        let bus = LateLinkBus()
        let client = try await abandonedConnect(bus)
        try await eventually("the late link was released", within: .seconds(10), every: .milliseconds(10)) {
            bus.made.last == "BlueZ: link down"
        }
        #expect(bus.made == [
            "Device1.Connect", "Device1.Disconnect", "BlueZ: link up, resolved", "Device1.Disconnect", "BlueZ: link down",
        ])
        #expect(await client.mirror.tree.hasLink(at: DevicePath(LateLinkBus.path)) == false)
    }

    @Test func aNewerConnectKeepsIt() async throws {
        // The abandoned connect's Disconnect finds no link; a newer connect of the device
        // brings the link up: it is that connect's, not the abandoned one's to release.
        let bus = LateLinkBus(lateLinkAfterDisconnect: false)
        let client = try await abandonedConnect(bus)
        let device = try #require(await client.mirror.tree.device(at: DevicePath(LateLinkBus.path)))
        try await client.connect(device, timeout: .seconds(10))
        #expect(await client.releaseIfItComesUp(device, abandoned: 1) == false)
        #expect(await client.mirror.tree.hasLink(at: DevicePath(LateLinkBus.path)) == true)
        #expect(bus.made == ["Device1.Connect", "Device1.Disconnect", "Device1.Connect", "BlueZ: link up, resolved"])
    }
}
