import FleetCore
import FleetRPC
import FleetWire
import Foundation
import JSONRPC
import Synchronization

/// Binds the `devices.*`/`device.*` methods (any device, leased links, GATT by handle) and
/// keeps what each connection has under way: its advertisement watch, its connects, its
/// leases (all ended when it closes); the characteristics it follows are counted with its
/// others (``ConnectionSubscriptions``).
final class DeviceBindings: Sendable {
    private struct PerConnection {
        var watch: AdvertisementWatch?
        /// The connects for leases under way, each with what cancels it.
        var connecting: [UInt64: @Sendable () -> Void] = [:]
        var nextConnect: UInt64 = 0
    }
    private let connections = Mutex<[UInt64: PerConnection]>([:])
    private let fleet: Fleet
    private let subscriptions: ConnectionSubscriptions

    init(fleet: Fleet, subscriptions: ConnectionSubscriptions) {
        self.fleet = fleet
        self.subscriptions = subscriptions
    }

    /// The connection's entry; the first time, what ends everything when it closes.
    private func track(_ connection: RPCConnection) {
        let isNew = connections.withLock { connections -> Bool in
            guard connections[connection.id] == nil else { return false }
            connections[connection.id] = PerConnection()
            return true
        }
        guard isNew else { return }
        let fleet = self.fleet
        // A lease lives as long as its connection: once the client's input ends (it left),
        // a connect for one is of no use, and is cancelled at once, its slot freed.
        connection.onInputEnd { [weak self] in
            let cancels = self?.connections.withLock { connections -> [@Sendable () -> Void] in
                guard let entry = connections[connection.id] else { return [] }
                connections[connection.id]?.connecting = [:]
                return Array(entry.connecting.values)
            }
            for cancel in cancels ?? [] { cancel() }
        }
        connection.onClose { [weak self] in
            if let ended = self?.connections.withLock({ $0.removeValue(forKey: connection.id) }) {
                ended.watch?.cancel()
                for cancel in ended.connecting.values { cancel() }
            }
            Task { await fleet.devices.endLeases(of: Self.holder(connection)) }
        }
    }

    static func holder(_ connection: RPCConnection) -> LeaseHolder {
        LeaseHolder(connection.id, uid: connection.credentials.uid)
    }

    /// Runs `body` (a connect for a lease) until it ends, or until the client's input ends:
    /// then it is cancelled at once (its connect abandoned, its slot freed).
    private func whileConnected<T: Sendable>(
        _ connection: RPCConnection, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let task = Task { try await body() }
        let registered = connections.withLock { connections -> UInt64? in
            guard connections[connection.id] != nil, !connection.inputHasEnded else { return nil }
            connections[connection.id]?.nextConnect += 1
            let id = connections[connection.id]?.nextConnect ?? 0
            connections[connection.id]?.connecting[id] = { task.cancel() }
            return id
        }
        if registered == nil { task.cancel() }
        defer {
            if let registered { _ = connections.withLock { $0[connection.id]?.connecting.removeValue(forKey: registered) } }
        }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    static func rpcError(_ error: any Error) -> RPCError {
        guard let error = error as? DeviceError else { return RPCError(.internalError, "\(error)") }
        var rpc = FleetError(error.code, error.message).rpcError
        if let code = error.attError { rpc.data = ["attError": .int(Int64(code))] }
        return rpc
    }

    static func now() -> String { Date().formatted(.iso8601) }

    func register(on dispatcher: inout JSONRPCDispatcher) {
        let fleet = self.fleet
        dispatcher.register(FleetMethods.DevicesWatch.self) { [self] params, context in
            let services = try (params.services ?? []).map { text throws(RPCError) -> GattUUID in
                guard let uuid = GattUUID(text) else {
                    throw RPCError(.invalidParams, "services: \"\(text)\" is not a UUID (like 180f or 0000180f-0000-1000-8000-00805f9b34fb).")
                }
                return uuid
            }
            let connection = context.connection
            track(connection)
            let watch = await fleet.devices.watchAdvertisements(services: services) { advertisement in
                _ = connection.notify(
                    method: DeviceAdvertisementNotification.method,
                    params: DeviceAdvertisementNotification(
                        address: advertisement.address.rawValue, addressType: advertisement.addressType, name: advertisement.name,
                        rssi: advertisement.rssi, txPower: advertisement.txPower,
                        manufacturerData: Dictionary(
                            uniqueKeysWithValues: advertisement.manufacturerData.map { (String($0.key), HexBytes.encode($0.value)) }),
                        serviceData: advertisement.serviceData.mapValues(HexBytes.encode),
                        serviceUuids: advertisement.serviceUUIDs, adapter: advertisement.adapter,
                        connected: advertisement.connected, time: Self.now()))
            } removed: { address, adapter in
                _ = connection.notify(
                    method: DeviceRemovedNotification.method,
                    params: DeviceRemovedNotification(address: address.rawValue, adapter: adapter, time: Self.now()))
            }
            let replaced = connections.withLock { connections -> AdvertisementWatch? in
                guard connections[connection.id] != nil else { return watch }  // closed meanwhile
                defer { connections[connection.id]?.watch = watch }
                return connections[connection.id]?.watch
            }
            replaced?.cancel()
            return DevicesWatchResult(watching: !connection.isClosed)
        }
        dispatcher.register(FleetMethods.DevicesUnwatch.self) { [self] _, context in
            let watch = connections.withLock { connections -> AdvertisementWatch? in
                defer { connections[context.connection.id]?.watch = nil }
                return connections[context.connection.id]?.watch
            }
            watch?.cancel()
            return DevicesWatchResult(watching: false)
        }
        dispatcher.register(FleetMethods.DevicesConnected.self) { params, _ in
            let services = try (params.services ?? ["1801"]).map { text throws(RPCError) -> GattUUID in
                guard let uuid = GattUUID(text) else {
                    throw RPCError(.invalidParams, "services: \"\(text)\" is not a UUID (like 180f or 0000180f-0000-1000-8000-00805f9b34fb).")
                }
                return uuid
            }
            let devices = await fleet.devices.connectedDevices(services: services, adapter: params.adapter)
            return DevicesConnectedResult(
                devices: devices.map {
                    .init(
                        address: $0.address.rawValue, addressType: $0.addressType, name: $0.name, adapter: $0.adapter,
                        serviceUuids: $0.serviceUUIDs)
                })
        }
        dispatcher.register(FleetMethods.DeviceConnect.self) { [self] params, context in
            let connection = context.connection
            track(connection)
            let holder = Self.holder(connection)
            let address = params.address
            let timeout = Duration.milliseconds(params.timeoutMs ?? 20_000)
            let link: DeviceLink
            do {
                link = try await whileConnected(connection) {
                    try await fleet.devices.leaseDevice(address, holder: holder, timeout: timeout) { reason in
                        _ = connection.notify(
                            method: DeviceDisconnectedNotification.method,
                            params: DeviceDisconnectedNotification(address: address.rawValue, reason: reason))
                    }
                }
            } catch {
                throw Self.rpcError(error)
            }
            // The client left while it connected: nobody holds the link.
            if connection.inputHasEnded { await fleet.devices.endLease(address, holder: holder) }
            return DeviceServicesResult(
                address: link.address.rawValue, name: link.name, adapter: link.adapter, mtu: link.mtu,
                services: link.services.map(Self.wire))
        }
        dispatcher.register(FleetMethods.DeviceDisconnect.self) { [self] params, context in
            subscriptions.remove(on: context.connection) { key in
                if case .device(params.address, _) = key { true } else { false }
            }
            await fleet.devices.endLease(params.address, holder: Self.holder(context.connection))
            return DeviceReleasedResult(address: params.address.rawValue)
        }
        dispatcher.register(FleetMethods.DeviceServices.self) { params, _ in
            do {
                let (mtu, services) = try await fleet.devices.deviceServices(params.address)
                return DeviceServicesResult(address: params.address.rawValue, mtu: mtu, services: services.map(Self.wire))
            } catch {
                throw Self.rpcError(error)
            }
        }
        dispatcher.register(FleetMethods.DeviceRead.self) { params, _ in
            do {
                let handle = UInt16(params.handle), descriptor = params.descriptor ?? false
                let value =
                    params.cached == true
                    ? try await fleet.devices.cachedAttribute(params.address, handle: handle, descriptor: descriptor)
                    : try await fleet.devices.readAttribute(
                        params.address, handle: handle, descriptor: descriptor, timeout: .milliseconds(params.timeoutMs ?? 10_000))
                return DeviceValueResult(value: value)
            } catch {
                throw Self.rpcError(error)
            }
        }
        dispatcher.register(FleetMethods.DeviceWrite.self) { params, _ in
            do {
                try await fleet.devices.writeAttribute(
                    params.address, handle: UInt16(params.handle), descriptor: params.descriptor ?? false, value: params.value,
                    withResponse: params.withResponse ?? true, timeout: .milliseconds(params.timeoutMs ?? 10_000))
                return DeviceWrittenResult()
            } catch {
                throw Self.rpcError(error)
            }
        }
        dispatcher.register(FleetMethods.DeviceNotify.self) { [self] params, context in
            try await notify(params, on: context.connection)
        }
    }

    /// `device.notify`: one subscription per characteristic on a connection, within its bound.
    private func notify(_ params: FleetMethods.DeviceNotify.Params, on connection: RPCConnection) async throws
        -> DeviceNotifyingResult
    {
        let key = ConnectionSubscriptions.Key.device(params.address, handle: params.handle)
        guard params.on ?? true else {
            subscriptions.remove(key, on: connection)
            return DeviceNotifyingResult(notifying: false)
        }
        // Followed already on this connection: the one subscription it has.
        let claim: ConnectionSubscriptions.Claim
        do {
            claim = try subscriptions.claim([key], on: connection)
        } catch {
            throw RPCError(.limitReached, error.message)
        }
        guard !claim.new.isEmpty else { return DeviceNotifyingResult(notifying: !connection.isClosed) }
        let address = params.address
        let handle = params.handle
        let outbox = ValueOutbox<[UInt8]>()
        let follow: DeviceFollow
        do {
            follow = try await fleet.devices.followAttribute(
                address, handle: UInt16(handle),
                onValue: { outbox.put($0) },
                onEnd: { [weak self] reason in
                    self?.subscriptions.remove(key, on: connection)
                    _ = connection.notify(
                        method: DeviceDisconnectedNotification.method,
                        params: DeviceDisconnectedNotification(address: address.rawValue, reason: reason))
                })
        } catch {
            subscriptions.remove(key, on: connection)
            throw Self.rpcError(error)
        }
        let delivery = Task {
            await outbox.deliver(to: connection) { value, lost in
                connection.notify(
                    method: DeviceValueNotification.method,
                    params: DeviceValueNotification(
                        address: address.rawValue, handle: handle, value: HexBytes.encode(value), time: Self.now(),
                        dropped: lost > 0 ? lost : nil))
            }
        }
        let kept = subscriptions.install(key, on: connection) {
            follow.cancel()
            outbox.finish()
            delivery.cancel()
        }
        return DeviceNotifyingResult(notifying: kept)
    }

    static func wire(_ service: DeviceGATTService) -> GattServiceInfo {
        GattServiceInfo(
            uuid: service.uuid, handle: service.handle, primary: service.primary,
            characteristics: service.characteristics.map { characteristic in
                GattCharacteristicInfo(
                    uuid: characteristic.uuid, handle: characteristic.handle, properties: characteristic.properties,
                    descriptors: characteristic.descriptors.map { GattDescriptorInfo(uuid: $0.uuid, handle: $0.handle) })
            })
    }
}
