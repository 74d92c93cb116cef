import BlueZ
import Logging

/// One board. All BlueZ work for it runs on this actor, so its GATT operations are
/// serialized while different boards work in parallel. What it knows and decides is the
/// value ``BoardCore``; this actor holds its I/O (its link's session, its connect task, the
/// calls waiting for it, its timers), feeds the core what BlueZ, the fleet, the calls and the
/// timers tell, and performs what the core decides.
actor Board {
    nonisolated let address: BoardAddress
    let context: FleetContext
    var logger: Logger
    /// What it knows and decides; changed only through ``update(_:)``.
    private(set) var core: BoardCore
    /// Whether ``performEffects()`` runs (an input given meanwhile is performed by it).
    private var performing = false
    /// Its adapters (each one's device, RSSI, last hearing) and latest readings, recorded
    /// without this actor.
    nonisolated let live: BoardLive
    /// Where its name and alias are kept (``Registry/identity(of:)``).
    nonisolated let registry: Registry
    /// The radio's time (the client's).
    nonisolated var clock: any RadioClock { context.client.clock }
    /// The current link's session: the profile's characteristics found on it, its sensors'
    /// subscriptions (a new one for every link: paths change across reconnects).
    var session: BoardSession?
    /// Calls waiting for the board to become ready.
    var waiters = BoardWaiters()
    var connectTask: Task<Void, Never>?
    /// Its GATT calls, one at a time.
    nonisolated let gatt: BoardGATT
    /// What a user's call does on it, through its ready link.
    nonisolated var commands: BoardCommands { BoardCommands(board: self) }

    var machine: BoardStateMachine { core.machine }
    var profile: BoardProfile { core.profile }
    var switches: BoardSwitches { core.switches }
    init(record: BoardRecord, devices: [BlueZDevice], adapterPowered: Bool, context: FleetContext, registry: Registry) {
        self.address = record.address
        self.context = context
        self.registry = registry
        self.gatt = BoardGATT(address: record.address, client: context.client)
        self.live = BoardLive(clock: context.client.clock, devices: devices)
        let machine = BoardStateMachine(
            policy: context.configuration.reconnect, random: context.randomness(record.address), present: !devices.isEmpty,
            adapterPowered: adapterPowered, now: context.client.clock.now)
        self.core = BoardCore(
            machine: machine, live: live, switches: BoardSwitches(desiredLED: record.desiredLED),
            profile: context.profiles.profile(offering: devices.flatMap(\.uuids)) ?? .nano,
            hasRoom: { [address = record.address] in context.hasRoom(onAdapter: $0, for: address) })
        var logger = context.logger
        logger[metadataKey: "ble.address"] = "\(record.address)"
        self.logger = logger
        // Counted from birth, so no phase change can slip past the tally.
        context.tally.add(record.address, board: ObjectIdentifier(self), phase: machine.phase)
    }

    /// Who the board is (its name and alias, the registry's), read without waiting for this
    /// actor (selections are resolved for every board of a fleet-wide call at once).
    nonisolated var identity: BoardIdentity { registry.identity(of: address) ?? BoardIdentity(address: address) }

    var snapshot: BoardSnapshot { core.snapshot(of: identity, live: live.current) }

    /// Whether the board holds a link it is not using right now (eviction candidate).
    var linkUsage: ConnectionSlots.Link { core.linkUsage(of: address, awaited: !waiters.isEmpty, now: clock.now) }

    /// Whether a call waits for the board to be ready.
    var isAwaited: Bool { !waiters.isEmpty }

    // MARK: Driving the core

    /// Gives the core an input (BlueZ's reports, the adapters' changes, the connect's end,
    /// a call's work, a timer), then performs what it decided: the one way the board's core,
    /// and its machine, change.
    @discardableResult
    func update<T: Sendable>(_ input: @Sendable (inout BoardCore, ContinuousClock.Instant) -> T) -> T {
        let result = input(&core, clock.now)
        performEffects()
        return result
    }

    /// Performs what the core decided since it was last asked, in order. What performing
    /// an effect gives the core in turn (the adapter of a link that fell at once is found
    /// gone, a switch is put back as the board's work) is recorded after what was decided
    /// before it, and performed by this loop: an effect never runs inside another.
    private func performEffects() {
        guard !performing else { return }
        performing = true
        defer { performing = false }
        while true {
            if let session, session.link != machine.link {
                // That link went: what still works on it finds its session ended.
                session.end()
                self.session = nil
            }
            let effects = core.takeEffects()
            guard !effects.isEmpty else { return }
            for effect in effects { perform(effect) }
        }
    }

    private func perform(_ effect: BoardCore.Effect) {
        switch effect {
        case .changed(let before, let after, let linkAdapter, let linkMoved):
            if linkMoved {
                // What an earlier link carried says nothing of the next.
                live.linkChanged()
                logger[metadataKey: "ble.adapter"] = linkAdapter.map { "\($0.name)" }
            }
            context.tally.boardChanged(address, board: ObjectIdentifier(self), phase: after)
            guard before != after else { return }
            logger.debug("board \(before) → \(after)")
            // A slot freed (the link is down): a connect waiting for one looks again.
            if before.holdsSlot && !after.holdsSlot { context.slotsChanged.notify() }
            context.events.publish(.boardPhaseChanged(address, from: before, to: after))
        case .connect(let action):
            switch action {
            case .startConnect: startConnect()
            case .startTimer(let timer): start(timer)
            case .failWaiters(let code): failWaiters(code)
            }
        case .linkUp(let action):
            switch action {
            case .lookUpCharacteristics(let link):
                Task { await self.prepare(link: link) }
            case .becomeReady(let settle):
                becameReady()
                start(settle)
            case .linkSettled(_, let through):
                if let through { context.adapter(through)?.health.connected() }
            }
        case .outcome(let action, let device):
            switch action {
            case .startConnect: startConnect()
            case .startTimer(let timer): start(timer)
            case .failWaiters(let code): failWaiters(code)
            case .waitForAdvertisement(let code): if let code { failWaiters(code) }
            case .disconnect(let code): release(device, failing: code)
            case .abandonConnection(let code): abandon(failing: code)
            case .linkLostEarly(let attempts, let through):
                dropLink()
                // A link that fell with its adapter (powered off) is no failed connect: the
                // board moves as every board of a lost adapter does (to another that hears
                // it), not into a retry floor in which a call would find it absent.
                if let adapter = through.flatMap({ context.adapter($0) }), !adapter.linkFellEarly(of: address, attempts: attempts, logger: logger) {
                    update { [path = adapter.path] in $0.adapterLost(path, now: $1) }
                }
            }
        case .teardown(let action, let device):
            switch action {
            case .disconnect(let code): release(device, failing: code)
            case .abandonConnection(let code): abandon(failing: code)
            case .failWaiters(let code): failWaiters(code)
            }
        case .close(let device):
            Task { [client = context.client] in try? await client.disconnect(device) }
        case .ledApplied(let on):
            context.events.publish(.ledApplied(address, on: on))
        case .log(let level, let message, let metadata):
            logger.log(level: level, message, metadata: metadata)
        }
    }

    /// Runs a connect (``BoardConnect``) as the board's connect task.
    private func startConnect() {
        connectTask?.cancel()
        let connect = BoardConnect(command: !waiters.isEmpty, logger: logger)
        connectTask = Task { await connect.run(for: self) }
    }

    /// Starts `timer`; the core is told when it fires.
    private func start(_ timer: BoardStateMachine.Timer) {
        Task { [weak self, clock] in
            guard (try? await clock.sleep(for: timer.after)) != nil else { return }
            await self?.timerFired(timer)
        }
    }

    /// Fails the waiters with `code`, if any; drops the link and releases it through
    /// `device` (`Device1.Disconnect`); the core is told when that returns.
    private func release(_ device: BlueZDevice?, failing code: FleetErrorCode?) {
        if let code { failWaiters(code) }
        dropLink()
        Task { [weak self, context, address] in
            if let device { await context.release(device, of: address) }
            await self?.update { $0.disconnectReturned(from: device?.path, now: $1) }
        }
    }

    /// Fails the waiters with `code`, if any, and drops the link without calling BlueZ.
    private func abandon(failing code: FleetErrorCode?) {
        if let code { failWaiters(code) }
        dropLink()
    }

    private func timerFired(_ timer: BoardStateMachine.Timer) {
        let awaited = !waiters.isEmpty
        update { $0.timerFired(timer, awaited: awaited, now: $1) }
    }

    /// Ends the connect in progress, and the current link's session.
    private func dropLink() {
        connectTask?.cancel()
        connectTask = nil
        defer { context.slotsChanged.notify() }
        session?.end()
        session = nil
    }

    // MARK: Its connect and its work

    /// What the board's connect came to; nothing when the board had cancelled it meanwhile.
    func connectEnded(_ result: BoardConnect.Result) {
        guard !Task.isCancelled else { return }
        let awaited = !waiters.isEmpty
        update { $0.connectEnded(result, awaited: awaited, now: $1) }
    }

    /// Work on the board ended: once none is left, its link may be given to another board.
    func workEnded() {
        update { core, _ in core.workEnded() }
        if !core.isBusy { context.slotsChanged.notify() }
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
                update { $0.callWaiting(now: $1) }
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
