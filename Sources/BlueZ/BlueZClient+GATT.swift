import DBus

/// How a characteristic value is written (`WriteValue` option `type`).
public enum GATTWriteType: String, Sendable {
    /// Write with response: BlueZ returns after the peripheral acknowledged it.
    case request
    /// Write without response.
    case command
}

extension BlueZClient {
    /// Looks up a characteristic by service and characteristic UUID under a connected,
    /// resolved device. Paths change across reconnects: look up after every connect.
    public func characteristic(
        device: BlueZDevice, service: BluetoothUUID, characteristic: BluetoothUUID
    ) async throws -> BlueZCharacteristic {
        let tree = await mirror.tree
        guard let current = tree.device(at: device.path) else {
            throw BlueZError.objectVanished("device \(device.address) is no longer known to BlueZ")
        }
        guard current.connected else { throw BlueZError.notConnected("device \(device.address) is not connected") }
        guard let found = tree.characteristic(device: device.path, service: service, characteristic: characteristic)
        else {
            throw BlueZError.notFound(
                "device \(device.address) has no characteristic \(characteristic) in service \(service)")
        }
        return found
    }

    /// `GattCharacteristic1.ReadValue`.
    public func readValue(_ characteristic: BlueZCharacteristic, timeout: Duration = .seconds(10)) async throws
        -> [UInt8]
    {
        let reply = try await call(
            characteristic.path, BlueZInterfaces.gattCharacteristic, "ReadValue",
            [.stringVariantDictionary([:])], timeout: timeout)
        guard let bytes = reply.first?.bytes else {
            throw BlueZError.other(name: "ReadValue", message: "reply carried no byte array")
        }
        return bytes
    }

    /// `GattCharacteristic1.WriteValue` with `type` request (acknowledged) or command.
    public func writeValue(
        _ value: [UInt8], to characteristic: BlueZCharacteristic, type: GATTWriteType = .request,
        timeout: Duration = .seconds(10)
    ) async throws {
        try await call(
            characteristic.path, BlueZInterfaces.gattCharacteristic, "WriteValue",
            [.bytes(value), .stringVariantDictionary(["type": .string(type.rawValue)])], timeout: timeout)
    }

    /// Subscribes (`StartNotify`) and streams every new `Value` of the characteristic
    /// (notifications; BlueZ also updates `Value` on reads). `StopNotify` is sent when the
    /// consumer stops. The stream throws `.objectVanished` when the characteristic goes away
    /// (disconnect) and `.serviceUnavailable` when `org.bluez` does.
    public func notifications(
        _ characteristic: BlueZCharacteristic, timeout: Duration = .seconds(10)
    ) async throws -> AsyncThrowingStream<[UInt8], any Error> {
        let events = await mirror.events(path: characteristic.path)
        try await call(characteristic.path, BlueZInterfaces.gattCharacteristic, "StartNotify", timeout: timeout)
        let path = characteristic.path
        return AsyncThrowingStream { continuation in
            let task = Task {
                for await event in events {
                    switch event {
                    case .propertiesChanged(path, BlueZInterfaces.gattCharacteristic, let changed, _):
                        if let value = changed["Value"]?.bytes { continuation.yield(value) }
                    case .interfacesRemoved(path, let interfaces)
                    where interfaces.contains(BlueZInterfaces.gattCharacteristic):
                        continuation.finish(throwing: BlueZError.objectVanished("characteristic \(path) went away"))
                        return
                    case .serviceLost:
                        continuation.finish(throwing: BlueZError.serviceUnavailable("org.bluez left the bus"))
                        return
                    default:
                        continue
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { [self] _ in
                task.cancel()
                Task {
                    try? await call(path, BlueZInterfaces.gattCharacteristic, "StopNotify", timeout: .seconds(5))
                }
            }
        }
    }
}
