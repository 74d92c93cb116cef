import BlueZ
import Foundation

extension Fleet {
    /// One board as it is now, or nil when it is not known (one hop, to that board only).
    public func snapshot(of address: BoardAddress) async -> BoardSnapshot? {
        await boards[address]?.snapshot
    }

    /// Every known board, in address order.
    public func snapshots(_ selection: Selection = .all) async -> [BoardSnapshot] {
        var result: [BoardSnapshot] = []
        for address in boards.keys.sorted() {
            guard let board = boards[address] else { continue }
            let snapshot = await board.snapshot
            if selection.match([snapshot.identity]).boards.isEmpty == false { result.append(snapshot) }
        }
        return result
    }

    /// The boards a selection names, and the selectors that named none: once per call,
    /// from state that needs no hop to any board's actor.
    func resolve(_ selection: Selection) -> (boards: [BoardIdentity], unmatched: [Selection.Selector]) {
        let identities = boards.keys.sorted().compactMap { boards[$0]?.identity }
        let match = selection.match(identities)
        return (match.boards, match.unmatched)
    }

    /// The caller's timeout, else one that fits the plan (``FleetContext/timeout(for:default:)``).
    func timeout(_ timeout: Duration?, for boards: [BoardIdentity]) -> Duration {
        timeout ?? context.timeout(for: boards, default: tunables.defaultCommandTimeout)
    }

    /// Runs `operation` on every selected board at once under one deadline.
    private func fanOut<Value: Sendable>(
        _ selection: Selection, timeout: Duration?,
        _ operation: @escaping @Sendable (Board) async throws -> Value
    ) async -> FleetResult<Value> {
        await fanOut(resolve(selection), timeout: timeout, operation)
    }

    /// Runs `operation` on the resolved boards at once under one deadline.
    private func fanOut<Value: Sendable>(
        _ resolved: (boards: [BoardIdentity], unmatched: [Selection.Selector]), timeout: Duration?,
        _ operation: @escaping @Sendable (Board) async throws -> Value
    ) async -> FleetResult<Value> {
        let (targets, unmatched) = resolved
        let boards = self.boards
        context.callStarted()
        defer { context.callEnded() }
        let tally = self.tally
        let queues = Array(adapters.values)
        let result = await FanOut.run(
            targets, timeout: self.timeout(timeout, for: targets), clock: client.clock,
            unfinished: { unfinished in
                tally.waitingForSlots(unfinished, deadline: timeout) { board in
                    queues.lazy.compactMap { $0.place(of: board) }.first
                }
            }
        ) { identity in
            guard let board = boards[identity.address] else {
                throw FleetError(.notFound, "\(identity.address) was forgotten.")
            }
            return try await operation(board)
        }
        return FleetResult(outcomes: result.outcomes, unmatched: unmatched)
    }

    /// Switches the LED of every selected board at once; one result per board. The state is
    /// remembered (and saved) per board and applied again whenever a board comes back: a
    /// board that could not be switched now (a failure worth retrying) is `pending`.
    public func setLED(_ selection: Selection, on: Bool, timeout: Duration? = nil) async -> FleetResult<Done> {
        await setSwitch(selection, name: BoardProfile.ledSwitch, on: on, timeout: timeout)
    }

    /// Every selected board shows itself: its LED blinks for a few seconds, then is as it was
    /// wanted (``BoardCommands/identify()``); one result per board. A board in standby takes a slot
    /// for it and gives it back.
    public func identify(_ selection: Selection, timeout: Duration? = nil) async -> FleetResult<Done> {
        let resolved = resolve(selection)
        // The blink's own time on top of the deadline planned for the links it needs.
        let blink = BoardGATT.identifyDuration + .seconds(2)
        let deadline = timeout ?? (self.timeout(nil, for: resolved.boards) + blink)
        return await fanOut(resolved, timeout: deadline) { try await $0.commands.identify(); return Done() }
    }

    /// Every selected board's temperature: cached values younger than `maxAge` (default: the
    /// configured maximum age) are served without radio traffic; the others are read.
    public func readTemperature(_ selection: Selection, maxAge: Duration? = nil, timeout: Duration? = nil) async
        -> FleetResult<TemperatureReading>
    {
        let maxAge = maxAge ?? tunables.temperatureMaxAge
        return await fanOut(selection, timeout: timeout) {
            try await $0.commands.readTemperature(maxAge: maxAge)
        }
    }

    /// Every selected board's value of `sensor` (a sensor of its profile): values younger
    /// than `maxAge` (default: the configured maximum age) are served without radio traffic.
    public func readSensor(_ selection: Selection, sensor: String, maxAge: Duration? = nil, timeout: Duration? = nil) async
        -> FleetResult<SensorValue>
    {
        let maxAge = maxAge ?? tunables.temperatureMaxAge
        return await fanOut(selection, timeout: timeout) { try await $0.commands.readSensor(sensor, maxAge: maxAge) }
    }

    /// Switches `name` (a switch of each board's profile) on or off on every selected board.
    /// The LED (``BoardSwitches/isLED(_:)``) is remembered as with ``setLED(_:on:timeout:)``.
    public func setSwitch(_ selection: Selection, name: String, on: Bool, timeout: Duration? = nil) async
        -> FleetResult<Done>
    {
        guard BoardSwitches.isLED(name) else {
            return await fanOut(selection, timeout: timeout) { try await $0.commands.setSwitch(name, on: on); return Done() }
        }
        let resolved = resolve(selection)
        // What a board's LED should be is the board's to keep (its ``BoardSwitches``: it puts
        // it back on every link); the registry saves it from there for the next run, in one
        // write for all of them while they are switched, not before.
        let wanted: DesiredLED = on ? .on : .off
        let boards = self.boards
        var addresses: [BoardAddress] = []
        for identity in resolved.boards {
            guard let board = boards[identity.address] else { continue }
            await board.update { core, _ in core.want(led: wanted) }
            addresses.append(identity.address)
        }
        let registry = self.registry
        let logger = self.logger
        async let saved: Void = { [addresses] in
            do {
                try await registry.setDesiredLED(wanted, for: addresses)
            } catch {
                logger.error("could not save the desired LED state: \(error)")
            }
        }()
        let result = await fanOut(resolved, timeout: timeout) {
            try await $0.commands.setSwitch(name, on: on)
            return Done()
        }
        await saved
        return FleetResult(outcomes: result.outcomes.map { $0.pending(when: \.retryable) }, unmatched: result.unmatched)
    }

    /// The kinds of board known now.
    public nonisolated var profiles: ProfileCatalog { context.profiles }

    /// Connects the selected boards (they stay connected while slots allow).
    public func connect(_ selection: Selection, timeout: Duration? = nil) async -> FleetResult<Done> {
        await fanOut(selection, timeout: timeout) { try await $0.commands.connect(); return Done() }
    }

    /// Disconnects the selected boards; they stay disconnected until a command needs them.
    public func disconnect(_ selection: Selection, timeout: Duration? = nil) async -> FleetResult<Done> {
        await fanOut(selection, timeout: timeout) { await $0.disconnect(); return Done() }
    }

    /// Reads any characteristic of the selected boards.
    public func readCharacteristic(
        _ selection: Selection, service: GattUUID, characteristic: GattUUID, timeout: Duration? = nil
    ) async -> FleetResult<[UInt8]> {
        await fanOut(selection, timeout: timeout) {
            try await $0.commands.readCharacteristic(service: service.bluetooth, characteristic: characteristic.bluetooth)
        }
    }

    /// Writes any characteristic of the selected boards.
    public func writeCharacteristic(
        _ selection: Selection, service: GattUUID, characteristic: GattUUID, value: [UInt8],
        withResponse: Bool = true, timeout: Duration? = nil
    ) async -> FleetResult<Done> {
        await fanOut(selection, timeout: timeout) {
            try await $0.commands.writeCharacteristic(
                service: service.bluetooth, characteristic: characteristic.bluetooth, value: value,
                withResponse: withResponse)
            return Done()
        }
    }

    /// Subscribes to any characteristic of the selected boards: one stream of values per
    /// board, each ending when that board's link drops.
    public func notifications(
        _ selection: Selection, service: GattUUID, characteristic: GattUUID, timeout: Duration? = nil
    ) async -> FleetResult<NotificationStream> {
        await fanOut(selection, timeout: timeout) {
            NotificationStream(
                values: try await $0.commands.notifications(service: service.bluetooth, characteristic: characteristic.bluetooth),
                address: $0.address)
        }
    }

    /// Names a board (an alias is unique, and usable wherever a selector is).
    public func setAlias(_ alias: String?, for address: BoardAddress) async throws {
        guard boards[address] != nil else {
            throw FleetError(.notFound, "No board \(address) is known; `boards.list` shows the known ones.")
        }
        do {
            try await registry.setAlias(alias, for: address)
        } catch {
            throw FleetError(.invalidArgument, "\(error)")
        }
        events.publish(.boardAliased(address, alias: alias))
    }

    /// Removes the selected boards from the fleet and from BlueZ. A forgotten board that
    /// advertises again is adopted again (subject to the adoption policy).
    public func forget(_ selection: Selection) async -> FleetResult<Done> {
        let (targets, unmatched) = resolve(selection)
        var outcomes: [BoardOutcome<Done>] = []
        for target in targets {
            let start = client.clock.now
            guard let board = await mirror.removeBoard(target.address) else { continue }
            tally.remove(target.address)
            sightings.forget(target.address)
            let devices = await board.forget()
            var result: Result<Done, FleetError> = .success(Done())
            do {
                try await registry.forget(target.address)
            } catch {
                result = .failure(FleetError(.failed, "Could not save the registry: \(error)"))
            }
            for device in devices { try? await client.removeDevice(device) }
            events.publish(.boardRemoved(target.address))
            outcomes.append(BoardOutcome(address: target.address, name: target.name, result: result, latency: client.clock.since(start)))
        }
        return FleetResult(outcomes: outcomes, unmatched: unmatched)
    }

    /// Waits `duration` with discovery on and returns the boards seen meanwhile.
    public func scan(for duration: Duration) async throws -> [BoardSnapshot] {
        guard tally.bluezAvailable else { throw FleetError(.bluezUnavailable, "BlueZ (bluetoothd) is not running.") }
        let powered = adapters.values.filter { $0.adapter.powered }
        guard !powered.isEmpty else {
            throw FleetError(.adapterOff, "The adapter \(adapterSelection) is powered off or missing.")
        }
        let start = client.clock.now
        for adapter in powered { await adapter.discovery.resume() }
        try await client.clock.sleep(for: duration)
        return await snapshots().filter { ($0.lastSeen ?? start) > start || $0.phase == .ready }
    }
}
