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

    /// Its name (as advertised) and alias (as a user set it): kept in ``live``.
    var name: String? { live.current.name }
    var alias: String? { live.current.alias }
    var machine: BoardStateMachine
    /// The board's BlueZ device objects, one per adapter that knows it.
    var devices: BoardDevices
    /// The adapter (path) of the board's link, of the connect in progress, or of the link
    /// going down: the state machine's.
    var linkAdapter: String? { machine.linkAdapter }
    /// The device object the link goes through.
    var device: BlueZDevice? { linkAdapter.flatMap { devices[$0] } }
    /// RSSI, last advertisement and latest temperature, recorded without this actor.
    nonisolated let live: BoardLive
    /// The radio's time (the client's).
    nonisolated var clock: any RadioClock { context.client.clock }

    /// The kind of board (which switches and sensors it has): the profile whose advertised
    /// service its device offers, looked at again at every connect.
    var profile: BoardProfile
    /// The current link's session: the profile's characteristics found on it, its sensors'
    /// subscriptions (a new one for every link: paths change across reconnects).
    var session: BoardSession?

    /// How its switches should stand: the LED as wanted, a switch an identify left mid-blink.
    var switches: BoardSwitches

    /// Commands waiting for the board to become ready.
    var waiters = BoardWaiters()
    var connectTask: Task<Void, Never>?
    /// Its GATT calls, one at a time.
    nonisolated let gatt: BoardGATT
    /// What a user's call does on it, through its ready link.
    nonisolated var commands: BoardCommands { BoardCommands(board: self) }

    init(record: BoardRecord, devices: [BlueZDevice], adapterPowered: Bool, context: FleetContext) {
        self.address = record.address
        self.context = context
        self.gatt = BoardGATT(address: record.address, client: context.client)
        self.live = BoardLive(clock: context.client.clock)
        live.setNames(name: record.name, alias: record.alias)
        self.switches = BoardSwitches(desiredLED: record.desiredLED)
        self.devices = BoardDevices(devices)
        self.profile = context.profiles.profile(offering: devices.flatMap(\.uuids)) ?? .nano
        let now = context.client.clock.now
        let machine = BoardStateMachine(
            policy: context.configuration.reconnect, random: context.randomness(record.address), present: !devices.isEmpty, adapterPowered: adapterPowered, now: now)
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
        let adapter = devices.shown(link: linkAdapter, rssi: live.rssiByAdapter)
        return BoardSnapshot(
            address: address, name: name, alias: alias, phase: machine.phase,
            rssi: live.rssiByAdapter.values.max(), desiredLED: switches.desiredLED, appliedLED: machine.currentLink?.appliedLED,
            temperature: live.temperature, lastFailure: machine.lastFailure, lastSeen: live.lastSeen,
            adapter: adapter.map(Fleet.adapterName), profile: profile, readings: live.readings)
    }

    /// Whether the board holds a link it is not using right now (eviction candidate): a link
    /// still coming up (connecting, resolving: the next connect on its adapter may run
    /// meanwhile) counts as busy, as does work on a ready one.
    var linkUsage: ConnectionSlots.Link {
        ConnectionSlots.Link(
            address: address, lastUsed: machine.currentLink?.lastUsed ?? clock.now, isBusy: machine.isBusy || !waiters.isEmpty || !machine.isReady,
            isLeaving: machine.phase == .disconnecting)
    }

    /// Whether a call waits for the board to be ready.
    var isAwaited: Bool { !waiters.isEmpty }

    // MARK: Driving the state machine

    /// Applies one event to the state machine, reports a phase change, performs the action.
    func apply(_ event: (inout BoardStateMachine, ContinuousClock.Instant) -> BoardStateMachine.Action) {
        let before = machine.phase
        let linkBefore = machine.linkAdapter
        let action = event(&machine, clock.now)
        let after = machine.phase
        let link = machine.linkAdapter
        if let session, session.link != machine.link {
            // That link went: what still works on it finds its session ended.
            session.end()
            self.session = nil
        }
        if link != linkBefore {
            // What an earlier link carried says nothing of the next.
            live.linkChanged()
            logger[metadataKey: "ble.adapter"] = link.map { "\(Fleet.adapterName($0))" }
        }
        if before != after || link != linkBefore {
            context.tally.boardChanged(address, board: ObjectIdentifier(self), phase: after, adapter: link)
        }
        if before != after {
            logger.debug("board \(before) → \(after)")
            // A slot freed (the link is down): a connect waiting for one looks again.
            if before.holdsSlot && !after.holdsSlot { context.slotsChanged.notify() }
            if (before == .absent) != (after == .absent) { live.setAwaitsAdvertisement(after == .absent) }
            context.events.publish(.boardPhaseChanged(address, from: before, to: after))
        }
        perform(action)
        if before != .standby, machine.phase == .standby { wakeIfHeardWhereRoomIs() }
    }

    private func perform(_ action: BoardStateMachine.Action) {
        switch action {
        case .none:
            break
        case .startConnect:
            connectTask?.cancel()
            let connect = BoardConnect(link: linkAdapter, command: !waiters.isEmpty, logger: logger)
            connectTask = Task { await connect.run(for: self) }
        case .startTimer(let timer):
            if case .retry = timer.kind {
                // Said once a streak of failures (its first retry); the rest at debug.
                logger.log(
                    level: machine.failedAttempts <= 1 ? .info : .debug,
                    "retrying connect later",
                    metadata: ["retry.delay": "\(timer.after)", "retry.attempts": "\(machine.failedAttempts)",
                               "retry.reason": "\(machine.lastFailure?.rawValue ?? "link lost")"])
            }
            start(timer)
        case .disconnect(let code):
            if let code { failWaiters(code) }
            let device = self.device
            dropLink()
            Task { [weak self, context, address] in
                if let device { await context.release(device, of: address) }
                await self?.disconnectReturned(from: device?.path)
            }
        case .abandonConnection(let code):
            if let code { failWaiters(code) }
            dropLink()
        case .lookUpCharacteristics(let link):
            Task { await self.prepare(link: link) }
        case .becomeReady(let settle):
            becameReady()
            start(settle)
        case .failWaiters(let code):
            failWaiters(code)
        case .waitForAdvertisement(let code):
            logger.info("waiting for the board to advertise again")
            if let code { failWaiters(code) }
        case .linkLostEarly(let attempts, let through):
            dropLink()
            // A link that fell with its adapter (powered off) is no failed connect: the board
            // moves as every board of a lost adapter does (to another that hears it), not into
            // a retry floor in which a call would find it absent.
            if let adapter = through.flatMap({ context.adapter($0) }), !adapter.linkFellEarly(of: address, attempts: attempts, logger: logger) {
                adapterLost(adapter.path)
            }
        case .linkSettled(let failures, let through):
            through.flatMap { context.adapter($0) }?.health.connected()
            if failures > 0 { logger.info("connected after \(failures) failed attempt\(failures == 1 ? "" : "s")") }
        }
    }

    /// Starts a timer the machine asked for; it reports back when it fires.
    private func start(_ timer: BoardStateMachine.Timer) {
        Task { [weak self, clock] in
            guard (try? await clock.sleep(for: timer.after)) != nil else { return }
            await self?.timerFired(timer)
        }
    }

    private func timerFired(_ timer: BoardStateMachine.Timer) {
        let awaited = !waiters.isEmpty
        apply { $0.timerFired(timer, awaited: awaited, now: $1) }
    }

    /// The disconnect of the link through `path` returned (done, or given up): the board
    /// leaves `disconnecting` if it is still there for that link. Late, it changes nothing:
    /// the link's end was reported already, and the board may be linked again since (through
    /// another adapter, once the stuck one was reset), which it must not take for lost.
    func disconnectReturned(from path: String?) {
        guard machine.phase == .disconnecting, device == nil || device?.path == path else { return }
        apply { $0.disconnected(now: $1) }
    }

    /// Ends the connect in progress, and the current link's session.
    private func dropLink() {
        connectTask?.cancel()
        connectTask = nil
        defer { context.slotsChanged.notify() }
        session?.end()
        session = nil
    }

    /// A connect chose where to go among the adapters that had `heard` the board.
    func placed(among heard: Set<String>) {
        // Every adapter that had reported the board by now was looked at (placement skips
        // one it cannot use, or whose device BlueZ no longer shows): only an adapter that
        // reports it after this wakes it from standby (``BoardDevices/reportedSincePlaced(besides:)``).
        devices.placed(among: heard)
    }

    /// What the board's connect came to (``BoardConnect``); nothing when the board had
    /// cancelled it meanwhile.
    func connectEnded(_ result: BoardConnect.Result) {
        guard !Task.isCancelled else { return }
        switch result {
        case .connected(let adapter):
            // Whether the connect worked is told when the link has lasted (`linkSettled`).
            apply { $0.connectSucceeded(through: adapter, now: $1) }
            apply { $0.servicesResolved(now: $1) }
        case .noSlot(let adapter):
            logger.debug("every connection slot is taken; waiting in standby", metadata: ["ble.adapter": "\(adapter)"])
            apply { $0.slotUnavailable(now: $1) }
            // A command that came while this connect finished is served as a command.
            if !waiters.isEmpty { apply { $0.connectRequested(reason: .command, now: $1) } }
        case .absent:
            apply { $0.connectFailed(.absent, now: $1) }
        case .failed(let errorClass, let error, let adapter):
            // The journal says a streak of failures once: its first at warning, the retries
            // that fail the same way at debug, and the success that ends it.
            logger.log(
                level: machine.failedAttempts == 0 ? .warning : .debug, "connect failed",
                metadata: ["error": "\(error)", "error.class": "\(errorClass.rawValue)", "ble.adapter": "\(adapter)"])
            apply { $0.connectFailed(errorClass, now: $1) }
        }
    }

    /// The connect through `adapter` got its slot there and calls `Device1.Connect` on
    /// `device` (which placement read from the mirror: the fleet may not have handed it here yet).
    func connectStarts(through adapter: String, device: BlueZDevice) {
        devices.connecting(through: device)
        apply { $0.connectAttemptStarted(through: adapter, now: $1) }
    }

    /// Work on the board ended: once none is left, its link may be given to another board.
    func workEnded() {
        apply { machine, _ in machine.workEnded() }
        if !machine.isBusy { context.slotsChanged.notify() }
    }

    // MARK: Waiters

    /// Returns once the board is ready (connecting it if needed); throws the `FleetError` that
    /// keeps it from being ready, or `CancellationError` when the caller gives up.
    func ensureReady() async throws {
        if machine.isReady { return }
        let id = waiters.newID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiters.add(id, continuation)
                apply { $0.callWaiting(now: $1) }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func cancelWaiter(_ id: UInt64) {
        waiters.cancel(id)
    }

    private func failWaiters(_ code: FleetErrorCode) {
        guard !waiters.isEmpty else { return }
        waiters.fail(FleetError(
            board: address, code, lastSeen: live.current.lastSeen.map { clock.since($0) }, lastFailure: machine.lastFailure))
    }
}
