import BlueZ
import Logging
import Synchronization

/// One ready link of a board: the device it goes through, the profile it was prepared with,
/// the profile's characteristics found on it, and its sensors' subscriptions. A new session
/// for every link (characteristic paths change across reconnects): the board ends it when the
/// link goes (``Board/apply(_:)``), and what still works on an older link finds that link's
/// session, never the next one's. Calls (``BoardCommands``) are handed the session of the
/// link they run on (``Board/whenReady(_:)``).
final class BoardSession: Sendable {
    /// The board machine's number for the link.
    let link: UInt64
    let device: BlueZDevice?
    let profile: BoardProfile
    let gatt: BoardGATT
    private let state: Mutex<State>

    private struct State {
        var handles: [String: BlueZCharacteristic]
        var subscriptions: [BlueZNotificationSession] = []
        var ended = false
    }

    init(link: UInt64, device: BlueZDevice?, profile: BoardProfile, gatt: BoardGATT, handles: [String: BlueZCharacteristic] = [:]) {
        self.link = link
        self.device = device
        self.profile = profile
        self.gatt = gatt
        state = Mutex(State(handles: handles))
    }

    /// A session for `link` through `device`, with the profile's characteristics looked up
    /// on BlueZ's objects.
    static func prepare(link: UInt64, device: BlueZDevice, profile: BoardProfile, gatt: BoardGATT) async -> BoardSession {
        let found = await gatt.client.mirror.characteristics(of: profile, on: device)
        return BoardSession(link: link, device: device, profile: profile, gatt: gatt, handles: found)
    }

    /// The profile's characteristics the link does not offer.
    var missing: [String] {
        let found = state.withLock { $0.handles }
        return profile.characteristics.map(\.name).filter { found[$0] == nil }
    }

    /// The characteristic of the profile's switch or sensor `name`, if it was found.
    func handle(named name: String) -> BlueZCharacteristic? {
        state.withLock { $0.handles[name] }
    }

    /// A profile characteristic on the link: as found when the link was prepared, else looked
    /// up again and kept (a link that went shows as `notConnected`).
    func handle(of item: BoardProfile.Characteristic) async throws -> BlueZCharacteristic {
        if let known = handle(named: item.name) { return known }
        let found = try await gatt.find(item, of: profile, on: device)
        state.withLock { $0.handles[item.name] = found }
        return found
    }

    /// Runs one GATT call through the link (``BoardGATT/call(on:_:)``).
    nonisolated(nonsending) func call<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await gatt.call(on: self, body)
    }

    /// Subscribes to every sensor of the profile that notifies (``BoardGATT/follow(_:_:adapter:live:events:logger:)``);
    /// the subscriptions end with the session.
    func followSensors(adapter: String?, live: BoardLive, events: EventBroadcaster<FleetEvent>, logger: Logger) {
        for sensor in profile.sensors where sensor.access.contains(.notify) {
            guard let handle = handle(named: sensor.name) else { continue }
            Task {
                do {
                    let subscription = try await gatt.follow(sensor, handle, adapter: adapter, live: live, events: events, logger: logger)
                    let ended = state.withLock { state in
                        if !state.ended { state.subscriptions.append(subscription) }
                        return state.ended
                    }
                    if ended { subscription.cancel() }
                } catch {
                    guard !isEnded, !(error is CancellationError) else { return }
                    logger.debug("could not subscribe to \(sensor.name) notifications", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    var isEnded: Bool { state.withLock { $0.ended } }

    /// The link went (or the session gave way to one with another profile): its subscriptions end.
    func end() {
        let subscriptions = state.withLock { state in
            state.ended = true
            defer { state.subscriptions = [] }
            return state.subscriptions
        }
        for subscription in subscriptions { subscription.cancel() }
    }
}
