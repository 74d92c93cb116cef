import Synchronization
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
        guard current.hasLink else { throw BlueZError.notConnected("device \(device.address) is not connected") }
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
    /// consumer is done with the stream. The stream ends with an error when the link goes
    /// down (see ``BlueZValueStream``).
    public func notifications(
        _ characteristic: BlueZCharacteristic, timeout: Duration = .seconds(10)
    ) async throws -> BlueZValueStream {
        let path = characteristic.path
        let watched = BlueZValueStream.watched(path)
        let events = await mirror.events(paths: watched.paths, interfaces: watched.interfaces)
        try await startNotify(path, timeout: timeout)
        let session = BlueZValueStream.Session { [self] in stopNotify(path) }
        return BlueZValueStream(events: events, path: path, session: session)
    }

    /// Subscribes (`StartNotify`) and calls `onValue` with every new `Value` of the
    /// characteristic, right on the mirror as the signal is applied (no hand-off per value:
    /// for steady traffic such as a sensor's notifications). `onEnd` is called once when the
    /// link goes down (`.notConnected`), the characteristic goes away (`.objectVanished`) or
    /// `org.bluez` does (`.serviceUnavailable`). Both must be quick and must not block.
    /// ``BlueZNotificationSession/cancel()`` ends the session and sends `StopNotify`.
    public func notifications(
        _ characteristic: BlueZCharacteristic, timeout: Duration = .seconds(10),
        onValue: @escaping @Sendable ([UInt8]) -> Void, onEnd: @escaping @Sendable (BlueZError) -> Void
    ) async throws -> BlueZNotificationSession {
        let path = characteristic.path
        let ended = BlueZNotificationSession.Flag()
        let watched = BlueZValueStream.watched(path)
        let observation = await mirror.observe(paths: watched.paths, interfaces: watched.interfaces) { event in
            switch BlueZValueStream.classify(event, path: path) {
            case .value(let value):
                if !ended.isSet { onValue(value) }
            case .end(let error):
                if ended.set() { onEnd(error) }
            case .none:
                break
            }
        }
        do {
            try await startNotify(path, timeout: timeout)
        } catch {
            await mirror.stopObserving(observation)
            throw error
        }
        return BlueZNotificationSession(observation: observation, ended: ended) { [self] in stopNotify(path) }
    }

    /// Opens one of this client's sessions on `path`. BlueZ keeps one subscription per D-Bus
    /// client: it answers a client already subscribed with success, or with `InProgress` while
    /// that subscription waits for the device's GATT client (registered while the link was
    /// down, say). Sessions of this client (the fleet's own following, a lease's) share that
    /// one subscription: `InProgress` with another session open means it is ours, and this
    /// one joins it once BlueZ says the characteristic notifies. A `StopNotify` still under
    /// way on `path` is answered first.
    private func startNotify(_ path: String, timeout: Duration) async throws {
        let (others, stopping) = notifySessions.open(path)
        await stopping?.value
        let start = clock.now
        do {
            try await call(path, BlueZInterfaces.gattCharacteristic, "StartNotify", timeout: timeout)
        } catch BlueZError.inProgress(let message) where others > 0 {
            do {
                try await mirror.wait(
                    timeout: max(.milliseconds(1), timeout - start.duration(to: clock.now)),
                    description: "\(path) notifying (BlueZ: \(message))", watching: path
                ) { snapshot in
                    snapshot.tree.properties(path, BlueZInterfaces.gattCharacteristic)?["Notifying"]?.bool == true
                        ? .done(()) : .pending
                }
            } catch {
                notifySessions.abandon(path)
                throw BlueZError.inProgress(
                    "\(message): this client's subscription to \(path) did not start notifying in time")
            }
        } catch {
            notifySessions.abandon(path)
            throw error
        }
    }

    /// Ends one session on `path`; BlueZ hears `StopNotify` only when it was the last, so one
    /// subscriber stopping never silences another.
    private func stopNotify(_ path: String) {
        notifySessions.close(path) { [self] in
            _ = try? await call(path, BlueZInterfaces.gattCharacteristic, "StopNotify", timeout: .seconds(5))
        }
    }
}

/// A notification subscription from ``BlueZClient/notifications(_:timeout:onValue:onEnd:)``.
public final class BlueZNotificationSession: Sendable {
    private let observation: BlueZMirrorObservation
    private let ended: Flag
    private let stopNotify: @Sendable () -> Void
    private let cancelled = Flag()

    /// A flag set once.
    final class Flag: Sendable {
        private let value = Mutex(false)

        var isSet: Bool { value.withLock { $0 } }

        /// Sets the flag; true if it was not set before.
        func set() -> Bool {
            value.withLock { value in
                defer { value = true }
                return !value
            }
        }
    }

    init(observation: BlueZMirrorObservation, ended: Flag, stopNotify: @escaping @Sendable () -> Void) {
        self.observation = observation
        self.ended = ended
        self.stopNotify = stopNotify
    }

    /// Stops the values (none is delivered after this returns) and ends the session (BlueZ
    /// hears `StopNotify` when it was this client's last on the characteristic). Idempotent.
    public func cancel() {
        guard cancelled.set() else { return }
        _ = ended.set()
        observation.cancel()
        stopNotify()
    }

    deinit { cancel() }
}
