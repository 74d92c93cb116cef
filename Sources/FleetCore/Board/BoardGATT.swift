import BlueZ
import Logging

/// The GATT side of one board: the queue that keeps its calls one at a time, the
/// characteristics looked up on its link and what a failed lookup means for the user, its
/// sensors' subscriptions, how it blinks. It holds no state of the board's: which link is
/// current, and what was found on it, is the board's (``Board``), passed in with each call.
struct BoardGATT: Sendable {
    let address: BoardAddress
    let client: BlueZClient
    /// One GATT operation at a time on the board (its own, and a client's through
    /// `device.*`): actor methods interleave at every await, so the board's actor alone
    /// would let a second write start while the first waits for its answer, and BlueZ
    /// refuses a second write to a characteristic with one under way (InProgress).
    let queue = ConnectScheduler(limit: 1)

    /// How long a GATT failure that may be the link's loss waits for BlueZ to report the
    /// link down before it counts as the board's answer. Real BlueZ sends `Connected=false`
    /// before, or with, the failed call's reply (both come from the same HCI disconnection).
    static let linkLossGrace: Duration = .seconds(1)

    /// Whether BlueZ reports the link through `path` down (`Connected` and
    /// `ServicesResolved` false, or the device gone), now or within `bound`: waits for the
    /// mirror's change. No path (no device): down.
    nonisolated(nonsending) func linkIsDown(_ path: DevicePath?, within bound: Duration) async -> Bool {
        guard let path else { return true }
        return (try? await client.mirror.wait(timeout: bound, description: "the link of \(address) going down", watching: path.rawValue) {
            ($0.tree.hasLink(at: path) ?? false) ? .pending : .done(())
        }) != nil
    }

    /// The characteristic of the profile's `item` on `device`, looked up on BlueZ's objects.
    nonisolated(nonsending) func find(_ item: BoardProfile.Characteristic, of profile: BoardProfile, on device: BlueZDevice?) async throws
        -> BlueZCharacteristic
    {
        guard let device else { throw FleetError(.notConnected, "\(address) is no longer known to BlueZ.") }
        do {
            return try await client.characteristic(device: device, service: item.service.bluetooth, characteristic: item.uuid.bluetooth)
        } catch BlueZError.notConnected(let message), BlueZError.objectVanished(let message) {
            throw FleetError(.notConnected, message.prefix(1).uppercased() + message.dropFirst() + ".")
        } catch {
            throw FleetError(
                .gattError,
                "\(address) has no \(item.name) characteristic \(item.uuid) (is it running the sketch of profile \(profile.name)?).")
        }
    }

    /// Any characteristic on `device`, by service and characteristic UUID.
    nonisolated(nonsending) func lookUp(service: BluetoothUUID, characteristic: BluetoothUUID, on device: BlueZDevice?) async throws
        -> BlueZCharacteristic
    {
        guard let device else { throw FleetError(.notConnected, "\(address) is no longer known to BlueZ.") }
        do {
            return try await client.characteristic(device: device, service: service, characteristic: characteristic)
        } catch BlueZError.notFound(let message) {
            throw FleetError(.notFound, message.prefix(1).uppercased() + message.dropFirst() + ".")
        } catch {
            throw FleetError(gatt: BlueZError(error), board: address)
        }
    }

    /// How a board shows itself (``BoardCommands/identify()``): its light on and off this many times.
    static let identifyBlinks = 6
    /// Each half of a blink: on this long, then off as long (2 per second, a pattern a
    /// person notices across a room).
    static let identifyHalfBlink: Duration = .milliseconds(250)
    /// The whole blink.
    static var identifyDuration: Duration { identifyHalfBlink * (2 * identifyBlinks) }

    /// Subscribes to a sensor's notifications: each value is recorded where it arrives, on
    /// the BlueZ mirror (``BoardLive/record(_:of:events:address:logger:)``), without a
    /// hand-off to the board's actor; what the link carries tells `adapter`'s health that
    /// its controller still works.
    nonisolated(nonsending) func follow(
        _ sensor: BoardProfile.Characteristic, _ characteristic: BlueZCharacteristic, adapter: AdapterPath?, live: BoardLive,
        events: EventBroadcaster<FleetEvent>, logger: Logger
    ) async throws -> BlueZNotificationSession {
        let address = self.address
        return try await client.notifications(
            characteristic,
            onValue: {
                if let adapter { live.carried(through: adapter) }
                live.record($0, of: sensor, events: events, address: address, logger: logger)
            },
            onEnd: { error in
                logger.debug("\(sensor.name) notifications ended", metadata: ["error": "\(error)"])
            })
    }
}

extension BoardProfile {
    /// The profile's switch or sensor `name`, or the board's answer that it has none.
    func characteristic(_ name: String, _ role: Role, of board: BoardAddress) throws -> Characteristic {
        let found = role == .switch ? self.switch(named: name) : sensor(named: name)
        guard let found else {
            let names = (role == .switch ? switches : sensors).map(\.name)
            throw FleetError(
                .notFound,
                "\(board) has no \(role.rawValue) \"\(name)\"; its profile \(self.name) has "
                    + (names.isEmpty ? "none." : names.joined(separator: ", ") + "."))
        }
        return found
    }

    /// The switch a board blinks to show itself: its LED, else the profile's first writable switch.
    func identifySwitch(of board: BoardAddress) throws -> Characteristic {
        let writable = switches.filter { $0.access.contains(.write) }
        guard let item = writable.first(where: { $0 == led }) ?? writable.first else {
            throw FleetError(.notFound, "\(board) has no switch to blink; its profile \(name) has none that can be written.")
        }
        return item
    }
}
