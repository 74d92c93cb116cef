import BlueZ

extension Board {
    /// Runs `operation` once the board is ready. When the link drops during the operation, it
    /// waits for the board to be ready again and retries, until the caller's deadline cancels
    /// it (a board that vanished mid-command ends as `absent` or `timeout`, not as a stray error).
    private func whenReady<T: Sendable>(_ operation: () async throws -> T) async throws -> T {
        apply { machine, _ in machine.workStarted() }
        defer {
            apply { $0.linkUsed(now: $1) }
            workEnded()
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
        if await gatt.linkIsDown(device?.path, within: .seconds(2)), machine.isReady { apply { $0.disconnected(now: $1) } }
    }

    /// Runs one GATT call on the board, one at a time (``BoardGATT/queue``). A failure is
    /// classified by what it means for the user: when the link went during the call (BlueZ
    /// answers that with ATT error 0x0e, not with "Not connected"), it is `notConnected`,
    /// which ``whenReady(_:)`` answers by waiting for the board again; else it is the
    /// board's or BlueZ's answer.
    private func gattCall<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await gatt.queue.acquire()
        defer { gatt.queue.release() }
        do {
            return try await body()
        } catch let error as CancellationError {
            throw error
        } catch let error as FleetError {
            throw error
        } catch {
            let failure = BlueZError(error)
            if failure.mayMeanLinkLoss, await gatt.linkIsDown(device?.path, within: BoardGATT.linkLossGrace) {
                throw FleetError(.notConnected, "\(address) lost its link during the operation (\(failure)).")
            }
            throw FleetError(gatt: failure, board: address)
        }
    }

    /// Switches the LED (write with response) and remembers it as the desired state, which
    /// is applied again by itself whenever the board comes back.
    func setLED(_ on: Bool) async throws {
        desiredLED = on ? .on : .off
        try await setSwitch(BoardProfile.ledSwitch, on: on)
    }

    /// Switches one of the profile's switches (write with response).
    func setSwitch(_ name: String, on: Bool) async throws {
        try await whenReady {
            let item = try profile.characteristic(name, .switch, of: address)
            guard item.access.contains(.write) else {
                throw FleetError(.invalidArgument, "The \(name) switch of \(address) cannot be written (its profile \(profile.name) says \(item.accessText)).")
            }
            let handle = try await handle(of: item)
            let link = machine.link
            try await gattCall { try await context.client.writeValue(item.encode(on: on), to: handle, type: .request) }
            if name == BoardProfile.ledSwitch { apply { machine, _ in machine.ledWritten(on, link: link) } }
        }
        guard name == BoardProfile.ledSwitch else { return }
        context.events.publish(.ledApplied(address, on: on))
    }

    /// Shows which physical board this is: blinks its LED (or its profile's first writable
    /// switch) ``BoardGATT/identifyBlinks`` times, then puts it back as it was wanted (off when
    /// nothing was asked). A board without a link (in standby: every slot taken) is connected
    /// for it, and gives its slot back after (unless a call or a reading uses the link by
    /// then: the rotation takes it back when another board needs it). Its outcome is the
    /// board's, like a switch's. A blink cut short is put back all the same, on this link or
    /// the next.
    func identify() async throws {
        let hadNoLink = !machine.isReady
        let switchItem = try profile.identifySwitch(of: address)
        do {
            try await whenReady {
                let handle = try await handle(of: switchItem)
                let link = machine.link
                leftMidBlink = switchItem.name
                for half in 0..<(2 * BoardGATT.identifyBlinks) {
                    let on = half % 2 == 0
                    try await gattCall { try await context.client.writeValue(switchItem.encode(on: on), to: handle, type: .request) }
                    try await clock.sleep(for: BoardGATT.identifyHalfBlink)
                }
                // As wanted now (a call may have switched the LED meanwhile).
                let wanted = switchItem.name == BoardProfile.ledSwitch && desiredLED == .on
                try await gattCall { try await context.client.writeValue(switchItem.encode(on: wanted), to: handle, type: .request) }
                leftMidBlink = nil
                if switchItem.name == BoardProfile.ledSwitch { apply { machine, _ in machine.ledWritten(wanted, link: link) } }
            }
        } catch {
            // Cut short (the link fell, a write failed, the caller's deadline): the switch is
            // put back now if the link is still up, else when the board is ready again.
            if leftMidBlink != nil, machine.isReady { putSwitchesBack(link: machine.link) }
            throw error
        }
        logger.info("board identified", metadata: ["switch": "\(switchItem.name)"])
        if hadNoLink { _ = await release() }
    }

    /// A sensor's value: the latest one when younger than `maxAge`, else read from the board
    /// (a sensor the board only notifies waits for its next value).
    func readSensor(_ name: String, maxAge: Duration) async throws -> SensorValue {
        let sensor = try profile.characteristic(name, .sensor, of: address)
        if let cached = live.reading(name), cached.age(at: clock.now) <= maxAge {
            return SensorValue(sensor: name, value: cached.value, unit: sensor.unit, decimals: sensor.decimals, age: cached.age(at: clock.now))
        }
        guard sensor.access.contains(.read) else {
            return try await nextNotified(sensor)
        }
        let bytes = try await whenReady {
            let handle = try await handle(of: try profile.characteristic(name, .sensor, of: address))
            return try await gattCall { try await context.client.readValue(handle) }
        }
        guard let reading = record(bytes, of: sensor) else {
            throw FleetError(
                .gattError,
                "\(address) sent its \(name) as \(bytes.count) bytes; its profile \(profile.name) says \(sensor.format.rawValue) (\(sensor.format.size)).")
        }
        return SensorValue(sensor: name, value: reading.value, unit: sensor.unit, decimals: sensor.decimals, age: .zero)
    }

    /// The next notified value of a sensor that cannot be read (the caller's deadline bounds it).
    private func nextNotified(_ sensor: BoardProfile.Characteristic) async throws -> SensorValue {
        let before = live.reading(sensor.name)?.receivedAt
        try await whenReady {}
        while true {
            let generation = live.readingArrived.generation
            if let reading = live.reading(sensor.name), reading.receivedAt != before {
                return SensorValue(sensor: sensor.name, value: reading.value, unit: sensor.unit, decimals: sensor.decimals, age: reading.age(at: clock.now))
            }
            await live.readingArrived.wait(after: generation)
            try Task.checkCancellation()
        }
    }

    /// The temperature: the built-in sensor `temperature`, in whole degrees.
    func readTemperature(maxAge: Duration) async throws -> TemperatureReading {
        let value = try await readSensor(BoardProfile.temperatureSensor, maxAge: maxAge)
        return TemperatureReading(value: Celsius(degrees: Int(value.value.rounded(.down))), age: value.age)
    }

    /// Reads any characteristic by service and characteristic UUID.
    func readCharacteristic(service: BluetoothUUID, characteristic: BluetoothUUID) async throws -> [UInt8] {
        try await whenReady {
            let found = try await gatt.lookUp(service: service, characteristic: characteristic, on: device)
            return try await gattCall { try await context.client.readValue(found) }
        }
    }

    /// Writes any characteristic by service and characteristic UUID.
    func writeCharacteristic(
        service: BluetoothUUID, characteristic: BluetoothUUID, value: [UInt8], withResponse: Bool
    ) async throws {
        try await whenReady {
            let found = try await gatt.lookUp(service: service, characteristic: characteristic, on: device)
            try await gattCall {
                try await context.client.writeValue(value, to: found, type: withResponse ? .request : .command)
            }
        }
    }

    /// Subscribes to any characteristic's notifications; the stream ends when the link drops.
    func notifications(service: BluetoothUUID, characteristic: BluetoothUUID) async throws
        -> BlueZValueStream
    {
        try await whenReady {
            let found = try await gatt.lookUp(service: service, characteristic: characteristic, on: device)
            return try await gattCall { try await context.client.notifications(found) }
        }
    }

    /// A profile characteristic on the current link: as found when the board became ready,
    /// else looked up again (a link that went shows as `notConnected`, which `whenReady`
    /// answers by connecting again).
    private func handle(of item: BoardProfile.Characteristic) async throws -> BlueZCharacteristic {
        if let known = handles[item.name] { return known }
        let device = self.device
        let found = try await gatt.find(item, of: profile, on: device)
        guard machine.isReady, device?.path == self.device?.path else {
            throw FleetError(.notConnected, "The link of \(address) went while looking up its \(item.name) characteristic.")
        }
        handles[item.name] = found
        return found
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
        let down = await gatt.linkIsDown(path, within: timeout)
        // The board's phase follows the link at once (the disconnect's own task reports it
        // too, a moment later: then a no-op), so no count shows it linked once it is not.
        if down { disconnectReturned(from: path) }
    }

    /// Gives an idle link away to free its slot for another board (the board waits in
    /// standby); false, and nothing done, when the board is no longer idle: a call took it
    /// since the fleet looked.
    func release() async -> Bool {
        guard machine.isReady, !machine.isBusy, waiters.isEmpty else { return false }
        await disconnect(evicted: true)
        return true
    }

    func setAlias(_ alias: String?) {
        live.setNames(name: name, alias: alias)
    }

    /// Removes the board from the fleet: disconnects it and fails anyone waiting for it.
    /// Returns its device objects (one per adapter that knows it), for BlueZ to forget.
    func forget() -> [BlueZDevice] {
        let known = Array(devices.values)
        apply { $0.forget(now: $1) }
        return known
    }
}
