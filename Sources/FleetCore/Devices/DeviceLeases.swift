import BlueZ
import Synchronization

/// Who holds a lease on a device's link: one client's connection to the daemon.
public struct LeaseHolder: Hashable, Sendable, CustomStringConvertible {
    public let id: UInt64

    public init(_ id: UInt64) {
        self.id = id
    }

    public var description: String { "client \(id)" }
}

/// A device's link as a client sees it once its lease is taken (``DeviceProxy/leaseDevice(_:holder:timeout:onLost:)``).
public struct DeviceLink: Sendable {
    public let address: BoardAddress
    public let name: String?
    /// The adapter the link goes through (`hci0`).
    public let adapter: String
    /// The ATT MTU BlueZ negotiated (23 when it does not say).
    public let mtu: Int
    public let services: [DeviceGATTService]
}

/// A failure of work on any device (not only a fleet's board): the fleet's error code and
/// sentence, and the ATT error code when the device answered with one.
public struct DeviceError: Error, Sendable, CustomStringConvertible {
    public let code: FleetErrorCode
    public let message: String
    /// The ATT error the device answered with (Core spec Vol 3 Part F 3.4.1.1), if any.
    public let attError: UInt8?

    public init(_ code: FleetErrorCode, _ message: String, attError: UInt8? = nil) {
        self.code = code
        self.message = message
        self.attError = attError
    }

    init(_ error: FleetError) {
        self.init(error.code, error.message)
    }

    /// A BlueZ failure of GATT work on `address`; the device's ATT error code kept.
    init(gatt error: BlueZError, address: BoardAddress) {
        guard let code = Self.attError(of: error) else {
            self.init(FleetError(gatt: error, board: address))
            return
        }
        let name = FleetError.attErrorName(code).map { ": \($0)" } ?? ""
        self.init(.gattError, "\(address) refused the GATT request (\(error.message), ATT error 0x\(String(code, radix: 16))\(name)).", attError: code)
    }

    /// The ATT error behind a BlueZ error: bluetoothd names some (its `create_gatt_dbus_error`
    /// in src/gatt-client.c: "Read not permitted" for 0x02, …) and gives the others' codes.
    static func attError(of error: BlueZError) -> UInt8? {
        switch error {
        case .attError(let code, _): code
        case .notPermitted(let message) where message.localizedCaseInsensitiveContains("read not permitted"): 0x02
        case .notPermitted(let message) where message.localizedCaseInsensitiveContains("write not permitted"): 0x03
        case .notPermitted(let message) where message.localizedCaseInsensitiveContains("not paired"): 0x05
        case .notAuthorized: 0x08
        case .notSupported: 0x06
        case .invalidOffset: 0x07
        case .invalidValueLength: 0x0d
        case .invalidArguments(let message) where message.localizedCaseInsensitiveContains("offset"): 0x07
        case .invalidArguments(let message) where message.localizedCaseInsensitiveContains("length"): 0x0d
        default: nil
        }
    }

    public var description: String { message }
}

/// The links the fleet holds for clients, by device: who holds each (several clients may
/// share one link), and what to tell each when the link goes down.
final class DeviceLeases: Sendable {
    struct Lease {
        var holders: [LeaseHolder: @Sendable (String) -> Void]
        let devicePath: String
        /// The device is one of the fleet's boards: its link stays when the lease ends.
        let isBoard: Bool
        var observation: BlueZMirrorObservation?
    }

    private struct State {
        var leases: [BoardAddress: Lease] = [:]
        /// One GATT operation at a time per device that is not a board (a board has its own).
        var queues: [BoardAddress: ConnectScheduler] = [:]
    }
    private let state = Mutex(State())

    /// The queue of GATT operations on `address` (not a board).
    func queue(for address: BoardAddress) -> ConnectScheduler {
        state.withLock { state in
            if let queue = state.queues[address] { return queue }
            let queue = ConnectScheduler(limit: 1)
            state.queues[address] = queue
            return queue
        }
    }

    /// Whether any client holds `address`'s link.
    func isLeased(_ address: BoardAddress) -> Bool {
        state.withLock { !($0.leases[address]?.holders.isEmpty ?? true) }
    }

    /// How many devices are leased now.
    var count: Int { state.withLock { $0.leases.count } }

    /// Adds `holder` to `address`'s lease; whether the lease is new (no one held it before).
    func add(
        _ holder: LeaseHolder, to address: BoardAddress, devicePath: String, isBoard: Bool,
        onLost: @escaping @Sendable (String) -> Void
    ) -> Bool {
        state.withLock { state in
            if state.leases[address]?.devicePath != devicePath, let old = state.leases[address] {
                old.observation?.cancel()
                state.leases[address] = nil
            }
            let first = state.leases[address] == nil
            if first { state.leases[address] = Lease(holders: [:], devicePath: devicePath, isBoard: isBoard) }
            state.leases[address]?.holders[holder] = onLost
            return first
        }
    }

    /// Keeps the observation of the link of `address`'s lease (cancelled when it ends).
    func watch(_ address: BoardAddress, with observation: BlueZMirrorObservation) {
        let stale: BlueZMirrorObservation? = state.withLock { state in
            guard state.leases[address] != nil else { return observation }
            state.leases[address]?.observation = observation
            return nil
        }
        stale?.cancel()
    }

    /// Takes `holder` off `address`'s lease; the lease itself when it was the last holder.
    func remove(_ holder: LeaseHolder, from address: BoardAddress) -> Lease? {
        state.withLock { state in
            guard state.leases[address]?.holders.removeValue(forKey: holder) != nil else { return nil }
            guard let lease = state.leases[address], lease.holders.isEmpty else { return nil }
            state.leases[address] = nil
            lease.observation?.cancel()
            return lease
        }
    }

    /// Every device `holder` holds.
    func held(by holder: LeaseHolder) -> [BoardAddress] {
        state.withLock { state in state.leases.filter { $0.value.holders[holder] != nil }.map(\.key) }
    }

    /// The link of `address` went down: the lease ends for all; each holder's `onLost`.
    func lost(_ address: BoardAddress, devicePath: String) -> Lease? {
        state.withLock { state in
            guard let lease = state.leases[address], lease.devicePath == devicePath else { return nil }
            state.leases[address] = nil
            lease.observation?.cancel()
            return lease
        }
    }
}
