public import DBus
public import Logging
import Synchronization

/// BlueZ's D-Bus API as typed Swift: adapters, discovery, devices, GATT.
///
/// Holds the bus connection and the object mirror; `run()` must be running (it keeps the
/// mirror exact) for waits to make progress. Every method throws `BlueZError`.
public final class BlueZClient: Sendable {
    /// How bluetoothd is reached: D-Bus in the daemon, a simulated radio in a simulation.
    public let bus: any BlueZBus
    public let mirror: BlueZObjectMirror
    /// The radio's time: every "now" and every wait of BlueZ and of the fleet on it.
    public let clock: any RadioClock
    let logger: Logger
    /// Notification sessions open per characteristic: BlueZ keeps one session per D-Bus
    /// client, so `StopNotify` is sent only when this client's last session ends.
    let notifySessions = NotifySessionCounts()
    /// This client's calls under way on each device's GATT objects: the kernel takes a link
    /// only once they are answered (``disconnect(_:timeout:)``).
    let gattCalls = GATTCallsUnderWay()
    /// The kernel's management interface behind this BlueZ, when it can be reached: links
    /// are released through it (``disconnect(_:timeout:)``).
    let management: (any ControllerManagement)?
    /// Set once the management interface turned out unusable here (logged once).
    let managementUnusable = Atomic<Bool>(false)
    /// Connects begun per device path, numbered: a link that comes up after its connect was
    /// abandoned is released only while no newer connect of the device began.
    let connectsBegun = Mutex<[String: UInt64]>([:])
    /// The pairing agent, when BlueZ is reached over D-Bus (a simulated radio pairs without one).
    let agent: BlueZAgent?

    public convenience init(connection: DBusConnection, management: ManagementInterface? = nil, logger: Logger) {
        self.init(bus: DBusBlueZBus(connection: connection), management: management, logger: logger)
    }

    public init(
        bus: any BlueZBus, management: (any ControllerManagement)? = nil, clock: any RadioClock = MachineClock(),
        logger: Logger
    ) {
        self.bus = bus
        self.management = management
        self.logger = logger
        self.clock = clock
        self.mirror = BlueZObjectMirror(logger: logger, clock: clock)
        self.agent = (bus as? DBusBlueZBus).map { BlueZAgent(connection: $0.connection, logger: logger) }
    }

    /// Connects to the bus BlueZ is on: the system bus (`nil`), or a D-Bus address.
    public static func connect(
        busAddress: String?, management: ManagementInterface? = nil, logger: Logger
    ) async throws -> BlueZClient {
        let connection = try await DBusConnection.connect(
            to: busAddress.map { .address($0) } ?? .system, logger: logger)
        return BlueZClient(connection: connection, management: management, logger: logger)
    }

    /// Closes the bus connection.
    public func close() {
        bus.close()
    }

    /// Keeps the mirror in sync until cancelled; throws when the bus connection is lost.
    public func run() async throws {
        try await bus.run(mirror: mirror)
    }

    /// Calls a BlueZ method, mapping every failure to `BlueZError`.
    @discardableResult
    func call(
        _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
        timeout: Duration
    ) async throws -> [DBusValue] {
        let device = gattCalls.begin(path)
        defer { if let device { gattCalls.end(device) } }
        do {
            return try await bus.call(path: path, interface: interface, member: member, arguments: arguments, timeout: timeout)
        } catch {
            throw BlueZError(error)
        }
    }

    func setProperty(_ path: String, _ interface: String, _ name: String, _ value: DBusValue, timeout: Duration)
        async throws
    {
        try await call(
            path, BlueZInterfaces.properties, "Set", [.string(interface), .string(name), .variant(value)],
            timeout: timeout)
    }
}

/// How many calls of this client are under way on the GATT objects (services,
/// characteristics, descriptors: the objects under a device's) of each device.
final class GATTCallsUnderWay: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    /// The device whose GATT object `path` is (`/org/bluez/hci0/dev_…/service000a/…` →
    /// `/org/bluez/hci0/dev_…`); nil for any other object, the device's own included. Read
    /// by bytes (an object path is ASCII): every call of this client asks it.
    static func device(ofGATTObject path: String) -> String? {
        let bytes = path.utf8
        var start = bytes.startIndex
        while true {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "/"))
            if bytes[start..<(end ?? bytes.endIndex)].starts(with: "dev_".utf8) {
                // The device's component: its path, when an object under it is named.
                return end.map { String(decoding: bytes[..<$0], as: UTF8.self) }
            }
            guard let end else { return nil }
            start = bytes.index(after: end)
        }
    }

    /// A call on `path` begins: the device to ``end(_:)`` it on, when `path` is a GATT object.
    func begin(_ path: String) -> String? {
        guard let device = Self.device(ofGATTObject: path) else { return nil }
        counts.withLock { $0[device, default: 0] += 1 }
        return device
    }

    func end(_ device: String) {
        counts.withLock { counts in
            let left = (counts[device] ?? 1) - 1
            counts[device] = left > 0 ? left : nil
        }
    }

    /// Whether a call on a GATT object of the device at `device` is under way.
    func any(on device: String) -> Bool {
        counts.withLock { $0[device] != nil }
    }
}

/// How many notification sessions of this client are open on each characteristic.
final class NotifySessionCounts: Sendable {
    private struct Entry {
        var count = 0
        /// The `StopNotify` of the last session to end, while it is under way.
        var stopping: Task<Void, Never>?
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// Opens one session on `path`: how many others of this client's were open there, and
    /// the `StopNotify` still under way there, which must be answered before a `StartNotify`
    /// (sent first, it would find the old session and the stop would end the new one).
    func open(_ path: String) -> (others: Int, stopping: Task<Void, Never>?) {
        entries.withLock { entries in
            let entry = entries[path] ?? Entry()
            entries[path] = Entry(count: entry.count + 1, stopping: entry.stopping)
            return (entry.count, entry.stopping)
        }
    }

    /// Ends one session; when it was the last on `path`, `stop` (the `StopNotify`) runs as a
    /// task a session opened meanwhile waits for.
    func close(_ path: String, stop: @escaping @Sendable () async -> Void) {
        entries.withLock { entries in
            var entry = entries[path] ?? Entry()
            entry.count = max(0, entry.count - 1)
            guard entry.count == 0 else {
                entries[path] = entry
                return
            }
            let previous = entry.stopping
            let task = Task {
                await previous?.value
                await stop()
            }
            entry.stopping = task
            entries[path] = entry
            // Forgotten once done, unless a newer stop took its place.
            Task { [weak self] in
                await task.value
                self?.entries.withLock { entries in
                    guard let current = entries[path], current.stopping == task else { return }
                    if current.count == 0 {
                        entries[path] = nil
                    } else {
                        entries[path]?.stopping = nil
                    }
                }
            }
        }
    }

    /// Whether a `StopNotify` is due or under way on a characteristic of the device at `device`.
    func stopping(under device: String) -> Bool {
        let prefix = device + "/"
        return entries.withLock { entries in entries.contains { $0.key.hasPrefix(prefix) && $0.value.stopping != nil } }
    }

    /// Gives back a session whose `StartNotify` failed (BlueZ kept nothing of it).
    func abandon(_ path: String) {
        entries.withLock { entries in
            guard var entry = entries[path] else { return }
            entry.count = max(0, entry.count - 1)
            entries[path] = entry.count == 0 && entry.stopping == nil ? nil : entry
        }
    }
}
