import DBus

/// A discovery filter (`Adapter1.SetDiscoveryFilter`).
public struct DiscoveryFilter: Sendable, Hashable {
    public var serviceUUIDs: [BluetoothUUID]
    /// `le`, `bredr` or `auto`.
    public var transport: String
    /// Report every advertisement (RSSI updates), not only new devices.
    public var duplicateData: Bool

    public init(serviceUUIDs: [BluetoothUUID] = [], transport: String = "le", duplicateData: Bool = true) {
        self.serviceUUIDs = serviceUUIDs
        self.transport = transport
        self.duplicateData = duplicateData
    }

    var dbusValue: DBusValue {
        var entries: [String: DBusValue] = [
            "Transport": .string(transport),
            "DuplicateData": .boolean(duplicateData),
        ]
        if !serviceUUIDs.isEmpty {
            entries["UUIDs"] = .array(elementSignature: "s", serviceUUIDs.map { .string($0.uuidString) })
        }
        return .stringVariantDictionary(entries)
    }

    /// BlueZ merges all clients' filters, so every device report is checked against ours.
    public func matches(_ device: BlueZDevice) -> Bool {
        serviceUUIDs.isEmpty || serviceUUIDs.contains(where: device.advertises)
    }
}

extension BlueZClient {
    /// Sets our discovery filter and starts discovery on `adapter`. BlueZ keeps one discovery
    /// session per D-Bus client; `stopDiscovery` ends ours.
    public func startDiscovery(adapter: BlueZAdapter, filter: DiscoveryFilter, timeout: Duration = .seconds(10))
        async throws
    {
        try await call(adapter.path.rawValue, BlueZInterfaces.adapter, "SetDiscoveryFilter", [filter.dbusValue], timeout: timeout)
        do {
            try await call(adapter.path.rawValue, BlueZInterfaces.adapter, "StartDiscovery", timeout: timeout)
        } catch BlueZError.inProgress {
            // Already discovering for this client: that is what was asked for.
        }
    }

    public func stopDiscovery(adapter: BlueZAdapter, timeout: Duration = .seconds(10)) async throws {
        try await call(adapter.path.rawValue, BlueZInterfaces.adapter, "StopDiscovery", timeout: timeout)
    }

    /// Devices on `adapter` matching `filter`, as known now.
    public func devices(adapter: BlueZAdapter, filter: DiscoveryFilter = DiscoveryFilter()) async -> [BlueZDevice] {
        await mirror.tree.devices(onAdapter: adapter.path).filter(filter.matches)
    }

    /// Devices on `adapter` matching `filter`: the ones known now, then each one again whenever
    /// it is added or its properties change (advertisement seen: RSSI, name, UUIDs…).
    /// Finishes (throwing `.serviceUnavailable`) if `org.bluez` goes away; ends when the
    /// consumer stops. Discovery itself is started separately (`startDiscovery`).
    public func deviceReports(adapter: BlueZAdapter, filter: DiscoveryFilter) async
        -> AsyncThrowingStream<BlueZDevice, any Error>
    {
        let events = await mirror.events()
        let initial = await devices(adapter: adapter, filter: filter)
        let mirror = self.mirror
        return AsyncThrowingStream { continuation in
            for device in initial { continuation.yield(device) }
            let task = Task {
                for await event in events {
                    let path: String
                    switch event {
                    case .interfacesAdded(let p, let interfaces) where interfaces[BlueZInterfaces.device] != nil:
                        path = p
                    case .propertiesChanged(let p, BlueZInterfaces.device, _, _):
                        path = p
                    case .serviceLost:
                        continuation.finish(throwing: BlueZError.serviceUnavailable("org.bluez left the bus"))
                        return
                    default:
                        continue
                    }
                    if let device = await mirror.tree.device(at: DevicePath(path)), device.adapterPath == adapter.path,
                        filter.matches(device)
                    {
                        continuation.yield(device)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
