public import BlueZ
public import DBus
import FleetCore
import Synchronization

/// A simulated bluetoothd with its controllers and the boards in the room: a ``BlueZBus``
/// that answers the calls blefleet makes as BlueZ 5.66 does and feeds the client's mirror
/// the signals bluetoothd would send, on the simulated clock.
///
/// Everything it does runs isolated to the mirror (as bluetoothd's signals reach the client
/// in one ordered stream): a change of the radio and the signals telling it are one step.
/// It also referees: a `Connect` made while an adapter's links and pending connects already
/// fill its limit, more links than the limit, or one board linked through two adapters
/// are recorded as ``violations``.
public final class SimulatedRadio: BlueZBus {
    struct Board {
        let address: String
        let name: String
        var powered = true
        var led = false
        var temperature: Int8
        /// The adapters (indexes) that hear it.
        var inRange: Set<Int>
        var rssi: [Int: Int16]
        /// Its connects fail at once (a board that refuses, until it is restored).
        var refuses = false
    }
    struct Adapter {
        let index: Int
        let limit: Int
        var plugged = true
        var powered = true
        var discovering = false
        /// Answers nothing (a hung controller) until it is powered off.
        var hung = false
        /// Every connect through it takes this much longer.
        var slowBy: Duration = .zero
        var path: String { "/org/bluez/hci\(index)" }
    }
    struct World {
        var boards: [String: Board] = [:]
        var adapters: [Adapter] = []
        /// Links up, by board address: the adapter (index).
        var links: [String: Int] = [:]
        /// Connects under way, by board address: the adapter.
        var pending: [String: Int] = [:]
        /// Links bluetoothd still shows on a hung controller whose boards ended them (a dead
        /// controller: their supervision timeout; they advertise again): by board address,
        /// the adapter. The host learns they are gone when the controller is reset.
        var stale: [String: Int] = [:]
        /// Device objects bluetoothd has, by adapter.
        var known: [Int: Set<String>] = [:]
        /// Characteristics with notifications on (paths).
        var notifying: Set<String> = []
        /// bluetoothd's lifetime: bumped at each restart; a call of an earlier one fails.
        var generation = 1
        var present = true
        var violations: [String] = []
        var mostLinks: [Int: Int] = [:]
        var connectCalls = 0
        /// `Connect` calls by board address.
        var connectsOf: [String: Int] = [:]
        var random: SeededRandomNumberGenerator
    }

    let world: Mutex<World>
    let clock: any RadioClock
    /// When the classroom started: times in the referee's notes count from here.
    let start: ContinuousClock.Instant
    private let attached = Mutex<BlueZObjectMirror?>(nil)

    /// The boards are of the built-in kind: its LED and temperature sensor, with the UUIDs the
    /// fleet looks for (taken from the profile, not written again here).
    static let led = BoardProfile.nano.led!
    static let temperature = BoardProfile.nano.sensor(named: BoardProfile.temperatureSensor)!

    init(adapters: [Int], boards: [Board], seed: UInt64, clock: any RadioClock) {
        var world = World(random: SeededRandomNumberGenerator(seed: seed ^ 0x5EED_0F_A1A))
        world.adapters = adapters.enumerated().map { Adapter(index: $0.offset, limit: $0.element) }
        for board in boards { world.boards[board.address] = board }
        self.world = Mutex(world)
        self.clock = clock
        self.start = clock.now
    }

    var mirror: BlueZObjectMirror {
        guard let mirror = attached.withLock({ $0 }) else { fatalError("the radio's mirror is attached by run(mirror:)") }
        return mirror
    }

    public var violations: [String] { world.withLock { $0.violations } }

    /// Now, from the classroom's start (as the referee writes it).
    var time: Duration { clock.since(start) }

    // MARK: BlueZBus

    public func run(mirror: BlueZObjectMirror) async throws {
        attached.withLock { $0 = mirror }
        await appear(mirror: mirror)
        try await clock.sleep(until: .now.advanced(by: .seconds(1_000_000_000)))
    }

    public func close() {}

    public func call(
        path: String, interface: String, member: String, arguments: [DBusValue], timeout: Duration
    ) async throws -> [DBusValue] {
        // As the daemon's D-Bus engine: a call from a task already cancelled is never sent.
        try Task.checkCancellation()
        let mirror = self.mirror
        let generation = world.withLock { $0.generation }
        // bluetoothd goes on with a call whose caller stopped waiting; the caller gets an
        // answer, its timeout (NoReply), or its own cancellation, whichever comes first.
        let answer = Answer()
        Task {
            do {
                let value = try await self.perform(path, interface, member, arguments, generation: generation, mirror: mirror)
                answer.give(.success(value))
            } catch {
                answer.give(.failure(error))
            }
        }
        let timer = Task { [clock] in
            guard (try? await clock.sleep(for: timeout)) != nil else { return }
            answer.give(.failure(DBusError(name: "org.freedesktop.DBus.Error.NoReply", message: "Did not receive a reply")))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await answer.value()
        } onCancel: {
            answer.give(.failure(CancellationError()))
        }
    }

    private func perform(
        _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue], generation: Int,
        mirror: BlueZObjectMirror
    ) async throws -> [DBusValue] {
        switch (interface, member) {
        case (BlueZInterfaces.adapter, "SetDiscoveryFilter"):
            try await adapterCommand(path, generation: generation, mirror: mirror) { _ in }
            return []
        case (BlueZInterfaces.adapter, "StartDiscovery"), (BlueZInterfaces.adapter, "StopDiscovery"):
            let start = member == "StartDiscovery"
            try await adapterCommand(path, generation: generation, mirror: mirror) { index in
                try await self.setDiscovering(start, adapter: index, mirror: mirror)
                // Boards advertise every 100 ms: a scan hears the new ones within a moment,
                // not at the next second of the air.
                if start {
                    Task { [clock] in
                        guard (try? await clock.sleep(for: .milliseconds(150))) != nil else { return }
                        await self.hearNewBoards(adapter: index, mirror: mirror)
                    }
                }
            }
            return []
        case (BlueZInterfaces.adapter, "RemoveDevice"):
            guard let device = arguments.first?.string, let (index, address) = Self.device(device) else { throw Self.unknown(path) }
            await remove(address, from: index, mirror: mirror)
            return []
        case (BlueZInterfaces.properties, "Set"):
            guard arguments.count >= 3, arguments[1].string == "Powered", let on = arguments[2].bool else {
                throw DBusError(name: "org.bluez.Error.InvalidArguments", message: "Invalid arguments in method call")
            }
            guard let index = Self.adapter(path) else { throw Self.unknown(path) }
            try await setPowered(on, adapter: index, generation: generation, mirror: mirror)
            return []
        case (BlueZInterfaces.properties, "Get"):
            // A device's Connected, as bluetoothd answers it: its link now, which the mirror
            // learns a moment later from the signal.
            guard let (index, address) = Self.device(path), arguments.count >= 2,
                arguments[0].string == BlueZInterfaces.device, arguments[1].string == "Connected"
            else { throw DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(interface).\(member) is not simulated for \(path)") }
            return [.variant(.boolean(world.withLock { $0.links[address] == index }))]
        case (BlueZInterfaces.device, "Connect"):
            guard let (index, address) = Self.device(path) else { throw Self.unknown(path) }
            try await connect(address, through: index, generation: generation, mirror: mirror)
            return []
        case (BlueZInterfaces.device, "Disconnect"):
            guard let (index, address) = Self.device(path) else { throw Self.unknown(path) }
            try await disconnect(address, through: index, generation: generation, mirror: mirror)
            return []
        case (BlueZInterfaces.gattCharacteristic, _):
            return try await gatt(member, path, arguments, generation: generation, mirror: mirror)
        default:
            throw DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(interface).\(member) is not simulated")
        }
    }

    // MARK: Paths

    static func adapter(_ path: String) -> Int? {
        let parts = path.split(separator: "/")
        guard parts.count >= 3, parts[2].hasPrefix("hci") else { return nil }
        return Int(parts[2].dropFirst(3))
    }

    /// `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF[/…]` → (0, `AA:BB:CC:DD:EE:FF`), read byte by byte.
    static func device(_ path: String) -> (Int, String)? {
        let bytes = Array(path.utf8)
        let prefix = Array("/org/bluez/hci".utf8)
        guard bytes.count >= prefix.count + 23, bytes.starts(with: prefix) else { return nil }
        var index = 0
        var at = prefix.count
        while at < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) {
            index = index * 10 + Int(bytes[at] - UInt8(ascii: "0"))
            at += 1
        }
        let marker = Array("/dev_".utf8)
        guard at > prefix.count, bytes.count >= at + 5 + 17, bytes[at..<(at + 5)].elementsEqual(marker) else { return nil }
        let address = bytes[(at + 5)..<(at + 22)].map { $0 == UInt8(ascii: "_") ? UInt8(ascii: ":") : $0 }
        guard bytes.count == at + 22 || bytes[at + 22] == UInt8(ascii: "/") else { return nil }
        return (index, String(decoding: address, as: UTF8.self))
    }

    static func devicePath(_ address: String, on index: Int) -> String {
        DevicePath(adapter: AdapterPath("/org/bluez/hci\(index)"), address: address).rawValue
    }

    static func unknown(_ path: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.UnknownObject", message: "Method called on unknown object \(path)")
    }

    static func failed(_ message: String) -> DBusError {
        DBusError(name: "org.bluez.Error.Failed", message: message)
    }

    static let gone = DBusError(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "The name org.bluez was not provided by any .service files")
}

/// One call's answer, given once: by bluetoothd, the caller's timeout or its cancellation.
final class Answer: Sendable {
    private enum Phase {
        case open(CheckedContinuation<[DBusValue], any Error>?)
        case given(Result<[DBusValue], any Error>)
    }
    private let phase = Mutex(Phase.open(nil))

    func give(_ result: Result<[DBusValue], any Error>) {
        let waiting = phase.withLock { phase -> CheckedContinuation<[DBusValue], any Error>? in
            guard case .open(let continuation) = phase else { return nil }
            phase = .given(result)
            return continuation
        }
        waiting?.resume(with: result)
    }

    func value() async throws -> [DBusValue] {
        try await withCheckedThrowingContinuation { continuation in
            let given = phase.withLock { phase -> Result<[DBusValue], any Error>? in
                switch phase {
                case .open: phase = .open(continuation); return nil
                case .given(let result): return result
                }
            }
            if let given { continuation.resume(with: given) }
        }
    }
}
