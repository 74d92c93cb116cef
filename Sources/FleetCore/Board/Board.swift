import BlueZ
import Logging

/// One board. All BlueZ work for it runs on this actor, so its GATT operations are
/// serialized while different boards work in parallel. Its connection lifecycle is the
/// plain-value ``BoardStateMachine``; this actor feeds it events (from commands, from the
/// BlueZ mirror, from timers) and performs the actions it returns.
actor Board {
    nonisolated let address: BoardAddress
    let context: FleetContext
    var logger: Logger

    var name: String? { didSet { live.setNames(name: name, alias: alias) } }
    var alias: String? { didSet { live.setNames(name: name, alias: alias) } }
    var machine: BoardStateMachine
    /// The BlueZ device object, while BlueZ knows the board.
    var device: BlueZDevice?
    /// RSSI, last advertisement and latest temperature, recorded without this actor.
    nonisolated let live = BoardLive()

    /// Looked up by UUID after every connect (paths change across reconnects).
    var ledCharacteristic: BlueZCharacteristic?
    var temperatureCharacteristic: BlueZCharacteristic?
    /// True once the handles of the current connection are looked up.
    var handlesReady = false
    /// Bumped whenever the link goes away, so work of an older connection can tell it is stale.
    var linkGeneration: UInt64 = 0

    var desiredLED: DesiredLED
    var appliedLED: Bool?

    /// Commands waiting for the board to become ready.
    var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    var nextWaiterID: UInt64 = 0
    var connectTask: Task<Void, Never>?
    /// Temperature notifications of the current link (values go straight to `live`).
    var notifySession: BlueZNotificationSession?
    var busyCount = 0
    var lastUsed: ContinuousClock.Instant
    /// One GATT operation at a time on this board: actor methods interleave at every await,
    /// so the actor alone would let a second write start while the first waits for its answer.
    let gattQueue = ConnectScheduler(limit: 1)

    init(record: BoardRecord, device: BlueZDevice?, adapterPowered: Bool, context: FleetContext) {
        self.address = record.address
        self.context = context
        self.name = record.name
        self.alias = record.alias
        live.setNames(name: record.name, alias: record.alias)
        self.desiredLED = record.desiredLED
        self.device = device
        let now = ContinuousClock.now
        self.lastUsed = now
        let machine = BoardStateMachine(
            policy: context.configuration.reconnect, present: device != nil, adapterPowered: adapterPowered, now: now)
        self.machine = machine
        var logger = context.logger
        logger[metadataKey: "ble.address"] = "\(record.address)"
        self.logger = logger
        // Counted from birth, so no phase change can slip past the tally.
        context.tally.add(record.address, board: ObjectIdentifier(self), phase: machine.phase)
        live.setAwaitsAdvertisement(machine.phase == .absent)
    }

    /// Who the board is, read without waiting for this actor (selections are resolved for
    /// every board of a fleet-wide call at once).
    nonisolated var identity: BoardIdentity {
        let current = live.current
        return BoardIdentity(address: address, name: current.name, alias: current.alias)
    }

    var snapshot: BoardSnapshot {
        let live = self.live.current
        return BoardSnapshot(
            address: address, name: name, alias: alias, phase: machine.phase, rssi: live.rssi, desiredLED: desiredLED,
            appliedLED: appliedLED, temperature: live.temperature, lastFailure: machine.lastFailure,
            lastSeen: live.lastSeen)
    }

    /// Whether the board holds a link it is not using right now (eviction candidate).
    var linkUsage: ConnectionSlots.Link {
        ConnectionSlots.Link(address: address, lastUsed: lastUsed, isBusy: busyCount > 0 || !waiters.isEmpty)
    }

    // MARK: Driving the state machine

    /// Applies one event to the state machine, reports a phase change, performs the action.
    func apply(_ event: (inout BoardStateMachine, ContinuousClock.Instant) -> BoardStateMachine.Action) {
        let before = machine.phase
        let action = event(&machine, .now)
        let after = machine.phase
        if before != after {
            logger.debug("board \(before) → \(after)")
            context.tally.phaseChanged(address, board: ObjectIdentifier(self), to: after)
            if (before == .absent) != (after == .absent) { live.setAwaitsAdvertisement(after == .absent) }
            context.events.publish(.boardPhaseChanged(address, from: before, to: after))
        }
        perform(action)
    }

    private func perform(_ action: BoardStateMachine.Action) {
        switch action {
        case .none:
            break
        case .startConnect:
            connectTask?.cancel()
            let command = !waiters.isEmpty
            connectTask = Task { await self.runConnect(command: command) }
        case .scheduleRetry(let delay, let token):
            logger.info(
                "retrying connect later",
                metadata: ["retry.delay": "\(delay)", "retry.attempts": "\(machine.failedAttempts)",
                           "retry.reason": "\(machine.lastFailure?.rawValue ?? "link lost")"])
            Task { [weak self] in
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                await self?.apply { $0.backoffTimerFired(token: token, now: $1) }
            }
        case .disconnect(let code):
            if let code { failWaiters(code) }
            connectTask?.cancel()
            connectTask = nil
            dropLink()
            let device = self.device
            let client = context.client
            Task { [weak self] in
                if let device { try? await client.disconnect(device) }
                await self?.apply { $0.disconnected(now: $1) }
            }
        case .abandonConnection(let code):
            if let code { failWaiters(code) }
            connectTask?.cancel()
            connectTask = nil
            dropLink()
        case .becomeReady:
            Task { await self.prepareReady(generation: self.linkGeneration) }
        case .failWaiters(let code):
            failWaiters(code)
        case .waitForAdvertisement(let code):
            logger.info("waiting for the board to advertise again")
            if let code { failWaiters(code) }
        }
    }

    /// Forgets the handles and notification session of the current link, and what the LED
    /// was: a board that lost its link may have rebooted (LED off) until it is written again.
    private func dropLink() {
        appliedLED = nil
        linkGeneration &+= 1
        notifySession?.cancel()
        notifySession = nil
        ledCharacteristic = nil
        temperatureCharacteristic = nil
        handlesReady = false
    }

    private func runConnect(command: Bool) async {
        // Discovery stays off from the moment a connect is wanted until the last queued one
        // is done: connecting while discovering waits for a discovery-window boundary.
        await context.discovery.hold()
        do {
            try await context.scheduler.acquire()
        } catch {
            await context.discovery.release()
            return  // cancelled while queued: whoever cancelled has told the machine
        }
        let outcome = await attemptConnect(command: command)
        context.scheduler.release()
        await context.discovery.release()
        guard !Task.isCancelled else { return }
        switch outcome {
        case .success:
            apply { $0.connectSucceeded(now: $1) }
            apply { $0.servicesResolved(now: $1) }
        case .failure(let error):
            let errorClass = ConnectErrorClass(error)
            logger.warning("connect failed", metadata: ["error": "\(error)", "error.class": "\(errorClass.rawValue)"])
            apply { $0.connectFailed(errorClass, now: $1) }
        }
    }

    /// With the adapter's connect permit held: take a link slot, then connect until resolved.
    private func attemptConnect(command: Bool) async -> Result<Void, BlueZError> {
        guard !Task.isCancelled else { return .failure(.timeout("cancelled")) }
        guard await context.reserveSlot(address, command) else {
            return .failure(.connectionFailed(.concurrentConnectionLimit, "all \(context.configuration.connectionLimit) connection slots are in use"))
        }
        guard let device else { return .failure(.notFound("\(address) is not known to BlueZ")) }
        apply { $0.connectAttemptStarted(now: $1) }
        do {
            try await context.client.connect(device, timeout: context.configuration.connectTimeout)
            return .success(())
        } catch {
            return .failure(BlueZError(error))
        }
    }

    /// The board is connected and resolved: look up its characteristics, resume waiters,
    /// subscribe to temperature notifications and put the LED back as last asked.
    private func prepareReady(generation: UInt64) async {
        guard let device, generation == linkGeneration else { return }
        let client = context.client
        let led = try? await client.characteristic(
            device: device, service: NanoProfile.ledService.bluetooth, characteristic: NanoProfile.ledStatus.bluetooth)
        let temperature = try? await client.characteristic(
            device: device, service: NanoProfile.sensorService.bluetooth, characteristic: NanoProfile.temperature.bluetooth)
        guard generation == linkGeneration, machine.isReady else { return }
        ledCharacteristic = led
        temperatureCharacteristic = temperature
        handlesReady = true
        lastUsed = .now
        if led == nil || temperature == nil {
            logger.notice("board lacks the Nano sketch's LED or temperature characteristic")
        }
        logger.info("board ready")
        resumeWaiters()
        if let temperature { subscribeTemperature(temperature, generation: generation) }
        await reapplyDesiredLED(generation: generation)
    }

    private func subscribeTemperature(_ characteristic: BlueZCharacteristic, generation: UInt64) {
        Task { await self.startTemperatureSession(characteristic, generation: generation) }
    }

    /// Subscribes to the temperature: each value is recorded where it arrives, on the
    /// BlueZ mirror (``record(temperatureBytes:)``), without a hand-off to this actor.
    private func startTemperatureSession(_ characteristic: BlueZCharacteristic, generation: UInt64) async {
        let live = self.live
        let events = context.events
        let address = self.address
        let logger = self.logger
        do {
            let session = try await context.client.notifications(
                characteristic,
                onValue: { Board.record(temperatureBytes: $0, into: live, events: events, address: address, logger: logger) },
                onEnd: { error in logger.debug("temperature notifications ended", metadata: ["error": "\(error)"]) })
            guard generation == linkGeneration else {
                session.cancel()
                return
            }
            notifySession?.cancel()
            notifySession = session
        } catch {
            guard generation == linkGeneration, !(error is CancellationError) else { return }
            logger.debug("could not subscribe to temperature notifications", metadata: ["error": "\(error)"])
        }
    }

    /// Records a temperature value (from a read, or a notification).
    func record(temperatureBytes bytes: [UInt8]) {
        Board.record(temperatureBytes: bytes, into: live, events: context.events, address: address, logger: logger)
    }

    private nonisolated static func record(
        temperatureBytes bytes: [UInt8], into live: BoardLive, events: EventBroadcaster<FleetEvent>,
        address: BoardAddress, logger: Logger
    ) {
        guard let celsius = try? Celsius(value: bytes) else {
            logger.warning("ignored a temperature value that is not one byte", metadata: ["bytes": "\(bytes.count)"])
            return
        }
        live.setTemperature(TemperatureCache.Entry(value: celsius, receivedAt: .now))
        events.publish(.temperature(address, celsius))
    }

    private func reapplyDesiredLED(generation: UInt64) async {
        guard desiredLED != .unknown, let led = ledCharacteristic else { return }
        let on = desiredLED == .on
        do {
            try await gattQueue.acquire()
            defer { gattQueue.release() }
            try await context.client.writeValue([on ? 1 : 0], to: led, type: .request)
            guard generation == linkGeneration else { return }
            appliedLED = on
            logger.info("LED re-applied", metadata: ["led": "\(on ? "on" : "off")"])
            context.events.publish(.ledApplied(address, on: on))
        } catch {
            logger.warning("could not re-apply the LED", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Waiters

    /// Returns once the board is ready (connecting it if needed); throws the `FleetError` that
    /// keeps it from being ready, or `CancellationError` when the caller gives up.
    func ensureReady() async throws {
        if machine.isReady && handlesReady { return }
        nextWaiterID &+= 1
        let id = nextWaiterID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiters[id] = continuation
                if !machine.isReady {
                    apply { $0.connectRequested(reason: .command, now: $1) }
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func cancelWaiter(_ id: UInt64) {
        waiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }

    private func resumeWaiters() {
        let current = waiters
        waiters = [:]
        for continuation in current.values { continuation.resume() }
    }

    private func failWaiters(_ code: FleetErrorCode) {
        guard !waiters.isEmpty else { return }
        let error = FleetError(code, message(for: code))
        let current = waiters
        waiters = [:]
        for continuation in current.values { continuation.resume(throwing: error) }
    }

    private func message(for code: FleetErrorCode) -> String {
        switch code {
        case .absent: "\(address) is not advertising (powered off or out of range?)."
        case .adapterOff: "The Bluetooth adapter is powered off or missing."
        case .bluezUnavailable: "BlueZ (bluetoothd) is not running."
        case .cancelled: "A disconnect of \(address) was requested meanwhile."
        case .notFound: "\(address) was forgotten."
        case .failed: "\(address) refused the connection (\(machine.lastFailure?.rawValue ?? "permanent error"))."
        default: "\(address) could not be connected (\(code.rawValue))."
        }
    }
}
