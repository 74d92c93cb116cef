@testable import BlueZ
import DBus
import Logging
import Synchronization
import Testing

/// bluetoothd's notification sessions as 5.66 keeps them: one subscription per D-Bus client
/// (`notify_clients`, by sender). A client already subscribed whose subscription waits for
/// the device's GATT client (made while the link was down: `notify_id` 0) is answered
/// `InProgress` until it is registered, and `Notifying` turns true then. Its `StopNotify`
/// answers when the test lets it.
final class SessionBus: BlueZBus {
    static let path = "/org/bluez/hci0/dev_CA_FE_00_00_00_01/service000a/char000b"

    struct State {
        var subscribed = false
        var calls: [String] = []
    }

    let state = Mutex(State())
    /// Whether the subscription waits for the device's GATT client (StartNotify: InProgress).
    let pending: Bool
    private let mirror = Mutex<BlueZObjectMirror?>(nil)
    private let stopGate: AsyncStream<Void>
    private let openGate: AsyncStream<Void>.Continuation

    init(pending: Bool) {
        self.pending = pending
        (stopGate, openGate) = AsyncStream.makeStream()
    }

    /// Lets the StopNotify under way answer.
    func answerStop() { openGate.yield() }

    var calls: [String] { state.withLock { $0.calls } }

    func run(mirror: BlueZObjectMirror) async throws {
        self.mirror.withLock { $0 = mirror }
        await mirror.load(
            [Self.path: [BlueZInterfaces.gattCharacteristic: [
                "UUID": .string("d888a9c3-f3cc-11ed-a05b-0242ac120003"), "Flags": .array(elementSignature: "s", [.string("read"), .string("notify")]),
                "Notifying": .boolean(false),
            ]]], owner: ":1.1")
        try await Task.sleep(for: .seconds(3600))
    }

    func close() {}

    func call(path: String, interface: String, member: String, arguments: [DBusValue], timeout: Duration) async throws
        -> [DBusValue]
    {
        let already = state.withLock { state -> Bool in
            state.calls.append(member)
            return state.subscribed
        }
        switch member {
        case "StartNotify":
            state.withLock { $0.subscribed = true }
            if already && pending {
                // Registered a moment later: the characteristic notifies.
                let mirror = self.mirror.withLock { $0 }
                Task {
                    try await Task.sleep(for: .milliseconds(50))
                    await mirror?.apply(.propertiesChanged(
                        path: Self.path, interface: BlueZInterfaces.gattCharacteristic, changed: ["Notifying": .boolean(true)],
                        invalidated: []))
                }
                throw DBusError(name: "org.bluez.Error.InProgress", message: "Operation already in progress")
            }
            if !pending { await setNotifying(true) }
        case "StopNotify":
            for await _ in stopGate { break }
            state.withLock {
                $0.subscribed = false
                $0.calls.append("StopNotify answered")
            }
            await setNotifying(false)
        default:
            break
        }
        return []
    }

    private func setNotifying(_ on: Bool) async {
        await mirror.withLock { $0 }?.apply(.propertiesChanged(
            path: Self.path, interface: BlueZInterfaces.gattCharacteristic, changed: ["Notifying": .boolean(on)], invalidated: []))
    }
}

@Suite("Notification sessions of one client share BlueZ's one subscription")
struct NotifySessionTests {
    func withClient(pending: Bool, _ body: (BlueZClient, SessionBus, BlueZCharacteristic) async throws -> Void) async throws {
        let bus = SessionBus(pending: pending)
        let client = BlueZClient(bus: bus, logger: Logger(label: "test"))
        let running = Task { try await client.run() }
        defer { running.cancel() }
        try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
        let properties = try #require(await client.mirror.tree.properties(SessionBus.path, BlueZInterfaces.gattCharacteristic))
        try await body(client, bus, BlueZCharacteristic(path: SessionBus.path, properties: properties, serviceUUID: nil))
    }

    @Test("A second session joins a subscription BlueZ is still registering (InProgress) once it notifies")
    func joinsAPendingSubscription() async throws {
        try await withClient(pending: true) { client, bus, characteristic in
            let first = try await client.notifications(characteristic, onValue: { _ in }, onEnd: { _ in })
            // The fleet's own following, then a lease's start_notify on the same characteristic:
            // BlueZ says InProgress (the fleet's subscription waits), and the lease joins it.
            let second = try await client.notifications(characteristic, onValue: { _ in }, onEnd: { _ in })
            #expect(bus.calls == ["StartNotify", "StartNotify"])
            #expect(await client.mirror.tree.properties(SessionBus.path, BlueZInterfaces.gattCharacteristic)?["Notifying"]?.bool == true)
            // Either ending leaves the other's subscription alone; the last sends StopNotify.
            first.cancel()
            #expect(!bus.calls.contains("StopNotify"))
            second.cancel()
            bus.answerStop()
            try await eventuallyTrue { bus.calls.contains("StopNotify answered") }
        }
    }

    @Test("A session opened while the last one's StopNotify is under way starts after it is answered")
    func startWaitsForTheStopUnderWay() async throws {
        try await withClient(pending: false) { client, bus, characteristic in
            let first = try await client.notifications(characteristic, onValue: { _ in }, onEnd: { _ in })
            first.cancel()
            try await eventuallyTrue { bus.calls.contains("StopNotify") }
            let opening = Task { try await client.notifications(characteristic, onValue: { _ in }, onEnd: { _ in }) }
            // The new StartNotify is not sent while the StopNotify is unanswered (it would find
            // the old session, and the stop's answer would end the new one at BlueZ).
            try await Task.sleep(for: .milliseconds(100))
            #expect(bus.calls == ["StartNotify", "StopNotify"])
            bus.answerStop()
            let second = try await opening.value
            #expect(bus.calls == ["StartNotify", "StopNotify", "StopNotify answered", "StartNotify"])
            #expect(bus.state.withLock { $0.subscribed })
            second.cancel()
            bus.answerStop()
        }
    }

    private func eventuallyTrue(_ condition: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
