@testable import BlueZ
import DBus
import Logging
import Synchronization
import Testing

/// bluetoothd sends the changes it holds in the order the objects first had one: a device's
/// `ServicesResolved` can come before its characteristics' `InterfacesAdded`, in the same
/// burst. A connect hands its caller the device's every object all the same.
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
                // announcement comes right after, in the same burst (when the connect first
                // waits: the clock below says when).
                await mirror.apply(.propertiesChanged(
                    path: Self.device, interface: BlueZInterfaces.device, changed: ["Connected": .boolean(true)], invalidated: []))
                await mirror.apply(.interfacesAdded(path: Self.service, interfaces: Self.serviceObject))
                await mirror.apply(.propertiesChanged(
                    path: Self.device, interface: BlueZInterfaces.device, changed: ["ServicesResolved": .boolean(true)],
                    invalidated: []))
                return []
            case "Disconnect":
                await mirror.apply(.propertiesChanged(
                    path: Self.device, interface: BlueZInterfaces.device,
                    changed: ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], invalidated: []))
                return []
            default:
                return []
            }
        }
    }

    /// Time that moves only when a short wait (the connect's settling) is made, announcing the
    /// characteristic at the first one; longer waits (the mirror's timeouts) are the machine's.
    final class BurstClock: RadioClock {
        private let offset = Mutex(Duration.zero)
        private let start = ContinuousClock.now
        let firstShortWait = Mutex<(@Sendable () async -> Void)?>(nil)
        var now: ContinuousClock.Instant { start.advanced(by: offset.withLock { $0 }) }
        func sleep(until deadline: ContinuousClock.Instant) async throws {
            let wait = now.duration(to: deadline)
            guard wait <= .milliseconds(100) else { return try await Task.sleep(for: wait) }
            let hook = firstShortWait.withLock { hook in defer { hook = nil }; return hook }
            await hook?()
            try Task.checkCancellation()
            offset.withLock { $0 += wait }
        }
    }

    /// A client on a ``BurstClock``, connected to the bus's device (its services resolved).
    func connected() async throws -> (LateAnnouncingBus, BurstClock, BlueZClient, Task<Void, any Error>) {
        let bus = LateAnnouncingBus()
        let clock = BurstClock()
        let client = BlueZClient(bus: bus, clock: clock, logger: Logger(label: "test"))
        let running = Task { try await client.run() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        let device = try #require(await client.device(at: DevicePath(LateAnnouncingBus.device)))
        try await client.connect(device, timeout: .seconds(10))
        return (bus, clock, client, running)
    }

    @Test func aConnectHandsOverTheObjectsAnnouncedRightAfterServicesResolved() async throws {
        let (bus, clock, client, running) = try await connected()
        defer { running.cancel() }
        clock.firstShortWait.withLock {
            $0 = { [mirror = client.mirror] in
                await mirror.apply(.interfacesAdded(
                    path: LateAnnouncingBus.characteristic, interfaces: LateAnnouncingBus.characteristicObject))
            }
        }
        try await client.gattObjectsSettled(under: DevicePath(LateAnnouncingBus.device))
        let characteristics = await client.mirror.tree.gattServices(device: DevicePath(LateAnnouncingBus.device)).flatMap(\.characteristics)
        #expect(characteristics.compactMap(\.uuid).contains(BluetoothUUID(LateAnnouncingBus.temperature)))
        // Nothing but Connect was asked of bluetoothd.
        #expect(bus.calls.withLock { $0 } == ["Connect"])
    }

    /// A caller cancelled while the device's objects settle (its client went) is told so at
    /// once, so that what it was about to hand over is not (the fleet releases a link it made).
    @Test func theWaitForTheObjectsEndsWhenItsCallerIsCancelled() async throws {
        let (_, clock, client, running) = try await connected()
        defer { running.cancel() }
        let waiting = Mutex<Task<Void, any Error>?>(nil)
        clock.firstShortWait.withLock { $0 = { waiting.withLock { $0 }?.cancel() } }
        // The task starts waiting once it is known to the hook that cancels it.
        let (go, start) = AsyncStream<Void>.makeStream()
        let task = Task {
            for await _ in go { break }
            try await client.gattObjectsSettled(under: DevicePath(LateAnnouncingBus.device))
        }
        waiting.withLock { $0 = task }
        start.yield()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
