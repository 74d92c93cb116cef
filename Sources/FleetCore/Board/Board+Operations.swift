import BlueZ

extension Board {
    /// Runs `operation` once the board is ready. When the link drops during the operation, it
    /// waits for the board to be ready again and retries, until the caller's deadline cancels
    /// it (a board that vanished mid-command ends as `absent` or `timeout`, not as a stray error).
    private func whenReady<T: Sendable>(_ operation: () async throws -> T) async throws -> T {
        busyCount += 1
        defer {
            busyCount -= 1
            lastUsed = .now
            if busyCount == 0 { context.linksChanged.notify() }
        }
        while true {
            try await ensureReady()
            do {
                return try await operation()
            } catch let error as FleetError where error.code == .notConnected {
                logger.debug("link lost during an operation; retrying once the board is back", metadata: ["error": "\(error)"])
                await linkWentDown()
            }
        }
    }

    /// An operation failed because the link went: waits (bounded) until BlueZ reports the
    /// link down, and makes sure the state machine has it too (the fleet hands the same
    /// change to this actor a moment later; it is then a no-op), so that the next
    /// `ensureReady` connects again instead of retrying on a link that is gone.
    private func linkWentDown() async {
        if await linkIsDown(within: .seconds(2)), machine.isReady { apply { $0.disconnected(now: $1) } }
    }

    /// Whether BlueZ reports the board's link down (`Connected` and `ServicesResolved`
    /// false, or the device gone), now or within `bound`: waits for the mirror's change.
    private func linkIsDown(within bound: Duration) async -> Bool {
        guard let device else { return true }
        let path = device.path
        return (try? await context.client.mirror.wait(timeout: bound, description: "the link of \(address) going down") {
            ($0.tree.device(at: path)?.hasLink ?? false) ? .pending : .done(())
        }) != nil
    }

    /// How long a GATT failure that may be the link's loss waits for BlueZ to report the
    /// link down before it counts as the board's answer. Real BlueZ sends `Connected=false`
    /// before, or with, the failed call's reply (both come from the same HCI disconnection).
    static let linkLossGrace: Duration = .seconds(1)

    /// Runs one GATT call on the board, one at a time. A failure is classified by what it
    /// means for the user: when the link went during the call (BlueZ answers that with ATT
    /// error 0x0e, not with "Not connected"), it is `notConnected`, which ``whenReady(_:)``
    /// answers by waiting for the board again; else it is the board's or BlueZ's answer.
    private func gatt<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await gattQueue.acquire()
        defer { gattQueue.release() }
        do {
            return try await body()
        } catch let error as CancellationError {
            throw error
        } catch let error as FleetError {
            throw error
        } catch {
            let failure = BlueZError(error)
            if failure.mayMeanLinkLoss, await linkIsDown(within: Self.linkLossGrace) {
                throw FleetError(.notConnected, "\(address) lost its link during the operation (\(failure)).")
            }
            throw FleetError(gatt: failure, board: address)
        }
    }

    /// Switches the LED (write with response) and remembers it as the desired state, which
    /// is applied again by itself whenever the board comes back.
    func setLED(_ on: Bool) async throws {
        desiredLED = on ? .on : .off
        try await whenReady {
            let led = try await sketchCharacteristic(.led)
            try await gatt { try await context.client.writeValue([on ? 1 : 0], to: led, type: .request) }
        }
        appliedLED = on
        context.events.publish(.ledApplied(address, on: on))
    }

    /// The temperature: from the notification cache when younger than `maxAge`, else read.
    func readTemperature(maxAge: Duration) async throws -> TemperatureCache.Entry {
        if let cached = live.temperature, cached.age(at: .now) <= maxAge { return cached }
        let bytes = try await whenReady {
            let characteristic = try await sketchCharacteristic(.temperature)
            return try await gatt { try await context.client.readValue(characteristic) }
        }
        record(temperatureBytes: bytes)
        guard bytes.count == 1, let entry = live.temperature else {
            throw FleetError(.gattError, "\(address) sent a temperature of \(bytes.count) bytes; expected 1.")
        }
        return entry
    }

    /// Reads any characteristic by service and characteristic UUID.
    func readCharacteristic(service: BluetoothUUID, characteristic: BluetoothUUID) async throws -> [UInt8] {
        try await whenReady {
            let found = try await lookUp(service: service, characteristic: characteristic)
            return try await gatt { try await context.client.readValue(found) }
        }
    }

    /// Writes any characteristic by service and characteristic UUID.
    func writeCharacteristic(
        service: BluetoothUUID, characteristic: BluetoothUUID, value: [UInt8], withResponse: Bool
    ) async throws {
        try await whenReady {
            let found = try await lookUp(service: service, characteristic: characteristic)
            try await gatt {
                try await context.client.writeValue(value, to: found, type: withResponse ? .request : .command)
            }
        }
    }

    /// Subscribes to any characteristic's notifications; the stream ends when the link drops.
    func notifications(service: BluetoothUUID, characteristic: BluetoothUUID) async throws
        -> BlueZValueStream
    {
        try await whenReady {
            let found = try await lookUp(service: service, characteristic: characteristic)
            return try await gatt { try await context.client.notifications(found) }
        }
    }

    /// The LED or temperature characteristic of the current link: as found when the board
    /// became ready, else looked up again (a link that went shows as `notConnected`, which
    /// `whenReady` answers by connecting again).
    private func sketchCharacteristic(_ which: SketchCharacteristic) async throws -> BlueZCharacteristic {
        if let known = which == .led ? ledCharacteristic : temperatureCharacteristic { return known }
        guard let device else { throw FleetError(.notConnected, "\(address) is no longer known to BlueZ.") }
        let (service, characteristic, name) =
            which == .led
            ? (NanoProfile.ledService, NanoProfile.ledStatus, "LED")
            : (NanoProfile.sensorService, NanoProfile.temperature, "temperature")
        do {
            let found = try await context.client.characteristic(
                device: device, service: service.bluetooth, characteristic: characteristic.bluetooth)
            guard machine.isReady, device.path == self.device?.path else {
                throw FleetError(.notConnected, "The link of \(address) went while looking up its \(name) characteristic.")
            }
            if which == .led { ledCharacteristic = found } else { temperatureCharacteristic = found }
            return found
        } catch let error as FleetError {
            throw error
        } catch BlueZError.notConnected(let message), BlueZError.objectVanished(let message) {
            throw FleetError(.notConnected, message.prefix(1).uppercased() + message.dropFirst() + ".")
        } catch {
            throw FleetError(.gattError, "\(address) has no \(name) characteristic (is it running the Nano sketch?).")
        }
    }

    enum SketchCharacteristic { case led, temperature }

    private func lookUp(service: BluetoothUUID, characteristic: BluetoothUUID) async throws -> BlueZCharacteristic {
        guard let device else { throw FleetError(.notConnected, "\(address) is no longer known to BlueZ.") }
        do {
            return try await context.client.characteristic(device: device, service: service, characteristic: characteristic)
        } catch BlueZError.notFound(let message) {
            throw FleetError(.notFound, message.prefix(1).uppercased() + message.dropFirst() + ".")
        } catch {
            throw FleetError(gatt: BlueZError(error), board: address)
        }
    }

    /// Connects (if needed) for a user.
    func connect() async throws {
        try await whenReady {}
    }

    /// Disconnects for a user (or to free a slot) and returns once the link is down. The
    /// board stays disconnected until the next command needs it.
    func disconnect(timeout: Duration = .seconds(10), evicted: Bool = false) async {
        // The device of the link, taken before the request drops the link's bookkeeping.
        let linked = device
        apply { $0.disconnectRequested(now: $1, evicted: evicted) }
        guard let linked else { return }
        let path = linked.path
        let down = (try? await context.client.mirror.wait(timeout: timeout, description: "disconnect of \(address)") {
            ($0.tree.device(at: path)?.hasLink ?? false) ? .pending : .done(())
        }) != nil
        // The board's phase follows the link at once (the disconnect's own task reports it
        // too, a moment later: then a no-op), so no count shows it linked once it is not.
        if down { apply { $0.disconnected(now: $1) } }
    }

    /// Gives an idle link away to free its slot for another board (the board waits in
    /// standby); false, and nothing done, when the board is no longer idle: a call took it
    /// since the fleet looked.
    func release() async -> Bool {
        guard machine.isReady, busyCount == 0, waiters.isEmpty else { return false }
        await disconnect(evicted: true)
        return true
    }

    func setAlias(_ alias: String?) {
        self.alias = alias
    }

    /// Removes the board from the fleet: disconnects it and fails anyone waiting for it.
    /// Returns its device objects (one per adapter that knows it), for BlueZ to forget.
    func forget() -> [BlueZDevice] {
        let known = Array(devices.values)
        apply { $0.forget(now: $1) }
        return known
    }
}
