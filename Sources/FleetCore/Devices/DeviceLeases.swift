import BlueZ
import Synchronization

/// Who holds a lease on a device's link: one client's connection to the daemon, and the
/// user it runs as (the kernel's word on the socket): leases are counted per user.
public struct LeaseHolder: Hashable, Sendable, CustomStringConvertible {
    public let id: UInt64
    public let uid: UInt32

    public init(_ id: UInt64, uid: UInt32) {
        self.id = id
        self.uid = uid
    }

    public var description: String { "client \(id) (uid \(uid))" }
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
/// share one link), and what to tell each when the link goes down; and the devices each user
/// holds or is connecting, which never pass the per-user bound. The slots their links take
/// are their adapter's (``AdapterLedger``: lent, never its reserve).
final class DeviceLeases: Sendable {
    struct Lease {
        var holders: [LeaseHolder: @Sendable (String) -> Void]
        let devicePath: DevicePath
        /// The adapter the link goes through (its BlueZ object path).
        let adapterPath: AdapterPath
        /// The device is one of the fleet's boards: its link stays when the lease ends.
        let isBoard: Bool
        var observation: BlueZMirrorObservation?
    }

    /// Why a lease is not given.
    enum Refusal: Equatable {
        /// The holder's user holds (or is connecting) `held` devices: the most one may.
        case userBound(held: Int)
    }

    private struct Asking: Hashable {
        let holder: LeaseHolder
        let address: BoardAddress
    }

    private struct State {
        var leases: [BoardAddress: Lease] = [:]
        /// Leases being asked for (``begin(_:for:bound:)``), how many times each.
        var asking: [Asking: Int] = [:]
        /// One GATT operation at a time per device that is not a board (a board has its own).
        var queues: [BoardAddress: ConnectScheduler] = [:]

        /// The devices `uid` holds or is connecting.
        func devices(of uid: UInt32) -> Set<BoardAddress> {
            var held = Set(leases.filter { $0.value.holders.keys.contains { $0.uid == uid } }.keys)
            held.formUnion(asking.keys.lazy.filter { $0.holder.uid == uid }.map(\.address))
            return held
        }
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

    /// How many devices are leased now.
    var count: Int { state.withLock { $0.leases.count } }

    /// How many devices `uid` holds or is connecting now.
    func count(of uid: UInt32) -> Int { state.withLock { $0.devices(of: uid).count } }

    /// The adapter (its path) of `address`'s lease, if it is leased.
    func adapterPath(of address: BoardAddress) -> AdapterPath? { state.withLock { $0.leases[address]?.adapterPath } }

    /// `holder` asks for a lease on `address`: refused when its user already holds or is
    /// connecting `bound` other devices. Pair a nil answer with ``end(_:for:)``.
    func begin(_ holder: LeaseHolder, for address: BoardAddress, bound: Int) -> Refusal? {
        state.withLock { state in
            let held = state.devices(of: holder.uid)
            guard held.contains(address) || held.count < bound else { return .userBound(held: held.count) }
            state.asking[Asking(holder: holder, address: address), default: 0] += 1
            return nil
        }
    }

    /// `holder`'s ask for `address` is over (leased, or not).
    func end(_ holder: LeaseHolder, for address: BoardAddress) {
        state.withLock { state in
            let key = Asking(holder: holder, address: address)
            guard let times = state.asking[key] else { return }
            state.asking[key] = times > 1 ? times - 1 : nil
        }
    }

    /// What adding a holder to a lease did.
    enum Added: Equatable {
        /// The lease is new (no one held the link before): its link is to be watched.
        case first
        /// Another client held the link already: the holder shares it.
        case joined
    }

    /// Adds `holder` to `address`'s lease through the adapter at `adapterPath` (whose ledger
    /// has lent the slot: ``AdapterLedger/lease(_:)``).
    func add(
        _ holder: LeaseHolder, to address: BoardAddress, devicePath: DevicePath, adapterPath: AdapterPath, isBoard: Bool,
        onLost: @escaping @Sendable (String) -> Void
    ) -> Added {
        state.withLock { state in
            if state.leases[address]?.devicePath != devicePath, let old = state.leases[address] {
                old.observation?.cancel()
                state.leases[address] = nil
            }
            let first = state.leases[address] == nil
            if first {
                state.leases[address] = Lease(holders: [:], devicePath: devicePath, adapterPath: adapterPath, isBoard: isBoard)
            }
            state.leases[address]?.holders[holder] = onLost
            return first ? .first : .joined
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
    func lost(_ address: BoardAddress, devicePath: DevicePath) -> Lease? {
        state.withLock { state in
            guard let lease = state.leases[address], lease.devicePath == devicePath else { return nil }
            state.leases[address] = nil
            lease.observation?.cancel()
            return lease
        }
    }
}
