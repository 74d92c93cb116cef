import BlueZ
import Logging
import Synchronization

/// One ready link of a board: the device it goes through, the profile it was prepared with,
/// the profile's characteristics found on it, and its sensors' subscriptions. A new session
/// for every link (characteristic paths change across reconnects): the board ends it when the
/// link goes (``Board/update(_:)``), and what still works on an older link finds that link's
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

    /// Runs one GATT call through the link, one at a time on the board (``BoardGATT/queue``).
    /// A failure is told by what it means for the user: when the link went during the call
    /// (BlueZ answers that with ATT error 0x0e, not with "Not connected"), it is
    /// `notConnected`, which ``Board/whenReady(_:)`` answers by waiting for the board again;
    /// else it is the board's or BlueZ's answer.
    nonisolated(nonsending) func call<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await gatt.queue.acquire()
        defer { gatt.queue.release() }
        do {
            return try await body()
        } catch let error as CancellationError {
            throw error
        } catch let error as FleetError {
            throw error
        } catch {
            let failure = BlueZError(error)
            if failure.mayMeanLinkLoss, await gatt.linkIsDown(device?.path, within: BoardGATT.linkLossGrace) {
                throw FleetError(.notConnected, "\(gatt.address) lost its link during the operation (\(failure)).")
            }
            throw FleetError(gatt: failure, board: gatt.address)
        }
    }

    /// Subscribes to every sensor of the profile that notifies (``BoardGATT/follow(_:_:adapter:live:events:logger:)``);
    /// the subscriptions end with the session.
    func followSensors(adapter: AdapterPath?, live: BoardLive, events: EventBroadcaster<FleetEvent>, logger: Logger) {
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
