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
    /// The board's BlueZ device objects, one per adapter that knows it, by adapter path.
    var devices: [String: BlueZDevice] = [:]
    /// The adapter (path) of the board's link, or of the connect in progress.
    var linkAdapter: String? {
        didSet {
            guard linkAdapter != oldValue else { return }
            if let linkAdapter { lastLinkAdapter = linkAdapter }
            live.linkChanged()
            context.tally.boardChanged(address, board: ObjectIdentifier(self), phase: machine.phase, adapter: linkAdapter)
        }
    }
    /// The adapter of the board's last link.
    var lastLinkAdapter: String?
    /// The adapters that had reported the board when its last connect chose where to go
    /// (every one was considered), and the one of its link: a board that enters standby is
    /// woken at once by any other that has reported it since and has room.
    var placedAmong: Set<String> = []
    /// The adapter of this daemon's connect of the current link (nil for a link adopted):
    /// its health learns whether the link lasted (``BoardStateMachine/settleTime``) or fell
    /// at once.
    var connectedThrough: FleetAdapter?
    /// The device object the link goes through.
    var device: BlueZDevice? { linkAdapter.flatMap { devices[$0] } }
    /// How long a connect waits for an adapter with room to hear the board when the ones
    /// that heard it are full.
    static let placementWait: Duration = .seconds(2)
    /// RSSI, last advertisement and latest temperature, recorded without this actor.
    nonisolated let live: BoardLive
    /// The radio's time (the client's).
    nonisolated var clock: any RadioClock { context.client.clock }

    /// The kind of board (which switches and sensors it has): the profile whose advertised
    /// service its device offers, looked at again at every connect.
    var profile: BoardProfile
    /// The profile's characteristics on the current link, by name: looked up by UUID after
    /// every connect (paths change across reconnects).
    var handles: [String: BlueZCharacteristic] = [:]

    var desiredLED: DesiredLED
    var appliedLED: Bool?

    /// Commands waiting for the board to become ready.
    var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    var nextWaiterID: UInt64 = 0
    var connectTask: Task<Void, Never>?
    /// The sensors' notifications on the current link (values go straight to `live`).
    var notifySessions: [BlueZNotificationSession] = []
    var lastUsed: ContinuousClock.Instant
    /// One GATT operation at a time on this board: actor methods interleave at every await,
    /// so the actor alone would let a second write start while the first waits for its answer.
    let gattQueue = ConnectScheduler(limit: 1)

    init(record: BoardRecord, devices: [BlueZDevice], adapterPowered: Bool, context: FleetContext) {
        self.address = record.address
        self.context = context
        self.live = BoardLive(clock: context.client.clock)
        self.name = record.name
        self.alias = record.alias
        live.setNames(name: record.name, alias: record.alias)
        self.desiredLED = record.desiredLED
        self.devices = Dictionary(devices.map { ($0.adapterPath, $0) }) { first, _ in first }
        self.profile = context.profiles.profile(offering: devices.flatMap(\.uuids)) ?? .nano
        let now = context.client.clock.now
        self.lastUsed = now
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
        // The adapter of its link, else the one that hears it best.
        let heard = live.rssiByAdapter.filter { devices[$0.key] != nil }.max { $0.value < $1.value }?.key
        let adapter = linkAdapter ?? heard ?? devices.keys.sorted().first
        return BoardSnapshot(
            address: address, name: name, alias: alias, phase: machine.phase,
            rssi: live.rssiByAdapter.values.max(), desiredLED: desiredLED, appliedLED: appliedLED,
            temperature: live.temperature, lastFailure: machine.lastFailure, lastSeen: live.lastSeen,
            adapter: adapter.map(Fleet.adapterName), profile: profile, readings: live.readings)
    }

    /// Whether the board holds a link it is not using right now (eviction candidate): a link
    /// still coming up (connecting, resolving: the next connect on its adapter may run
    /// meanwhile) counts as busy, as does work on a ready one.
    var linkUsage: ConnectionSlots.Link {
        ConnectionSlots.Link(
            address: address, lastUsed: lastUsed, isBusy: machine.isBusy || !waiters.isEmpty || !machine.isReady,
            isLeaving: machine.phase == .disconnecting)
    }

    /// Whether a call waits for the board to be ready.
    var isAwaited: Bool { !waiters.isEmpty }

    // MARK: Driving the state machine

    /// Applies one event to the state machine, reports a phase change, performs the action.
    func apply(_ event: (inout BoardStateMachine, ContinuousClock.Instant) -> BoardStateMachine.Action) {
        let before = machine.phase
        let action = event(&machine, clock.now)
        let after = machine.phase
        // No link held, no link adapter: placement must not keep a board on the adapter of
        // a link that is gone (or was re-adopted while it went down).
        if !machine.holdsLink, linkAdapter != nil { linkAdapter = nil }
        if before != after {
            logger.debug("board \(before) → \(after)")
            context.tally.boardChanged(address, board: ObjectIdentifier(self), phase: after, adapter: linkAdapter)
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
            let command = !waiters.isEmpty
            connectTask = Task { await self.runConnect(command: command) }
        case .scheduleRetry(let delay, let token):
            // Said once a streak of failures (its first retry); the rest at debug.
            logger.log(
                level: machine.failedAttempts <= 1 ? .info : .debug,
                "retrying connect later",
                metadata: ["retry.delay": "\(delay)", "retry.attempts": "\(machine.failedAttempts)",
                           "retry.reason": "\(machine.lastFailure?.rawValue ?? "link lost")"])
            Task { [weak self, clock] in
                guard (try? await clock.sleep(for: delay)) != nil else { return }
                await self?.apply { $0.backoffTimerFired(token: token, now: $1) }
            }
        case .disconnect(let code):
            if let code { failWaiters(code) }
            connectTask?.cancel()
            connectTask = nil
            let device = self.device
            dropLink()
            let context = self.context
            let address = self.address
            Task { [weak self] in
                if let device {
                    do {
                        try await context.client.disconnect(device)
                    } catch BlueZError.timeout {
                        // The link did not go down: its controller is asked whether it answers at all.
                        await context.gotNoAnswer(to: .release, for: address, onAdapter: device.adapterPath)
                    } catch {}
                }
                await self?.disconnectReturned(from: device?.path)
            }
        case .abandonConnection(let code):
            if let code { failWaiters(code) }
            connectTask?.cancel()
            connectTask = nil
            dropLink()
        case .lookUpCharacteristics(let link):
            Task { await self.prepare(link: link) }
        case .becomeReady:
            becameReady()
        case .failWaiters(let code):
            failWaiters(code)
        case .waitForAdvertisement(let code):
            logger.info("waiting for the board to advertise again")
            if let code { failWaiters(code) }
        case .linkLostEarly(let attempts):
            let adapter = connectedThrough
            connectTask?.cancel()
            connectTask = nil
            dropLink()
            // The link fell with its adapter (powered off; BlueZ told the link's end after
            // the fleet took the adapter's): no failed connect. The board moves as every
            // board of a lost adapter does (to another that hears it), not into a retry floor
            // in which a call would find it absent.
            if let adapter, !adapter.adapter.powered {
                adapterLost(adapter.path)
                return
            }
            // Said like any failed connect: the streak's first at warning, the rest at debug.
            logger.log(
                level: attempts <= 1 ? .warning : .debug, "connect failed",
                metadata: ["error": "the link was lost as soon as it came up", "error.class": "\(ConnectErrorClass.transient.rawValue)",
                           "ble.adapter": "\(adapter?.name ?? lastLinkAdapter.map(Fleet.adapterName) ?? "?")"])
            // Placement weighs it for this board; the adapter's health does not (all of an
            // adapter's young links also fall when someone powers it off).
            adapter?.noteFailure(of: address)
        case .linkSettled(let failures):
            connectedThrough?.health.connected()
            if failures > 0 { logger.info("connected after \(failures) failed attempt\(failures == 1 ? "" : "s")") }
        }
    }

    /// The disconnect of the link through `path` returned (done, or given up): the board
    /// leaves `disconnecting` if it is still there for that link. Late, it changes nothing:
    /// the link's end was reported already, and the board may be linked again since (through
    /// another adapter, once the stuck one was reset), which it must not take for lost.
    func disconnectReturned(from path: String?) {
        guard machine.phase == .disconnecting, device == nil || device?.path == path else { return }
        apply { $0.disconnected(now: $1) }
    }

    /// Forgets the handles and notification session of the current link, and what the LED
    /// was: a board that lost its link may have rebooted (LED off) until it is written again.
    private func dropLink() {
        defer { context.slotsChanged.notify() }
        appliedLED = nil
        linkAdapter = nil
        connectedThrough = nil
        logger[metadataKey: "ble.adapter"] = nil
        for session in notifySessions { session.cancel() }
        notifySessions = []
        handles = [:]
    }

    private func runConnect(command: Bool) async {
        // Through the adapter that hears the board best and has room (Placement).
        guard var choice = await context.placement(for: address, link: linkAdapter, rssi: live.current.rssiByAdapter)
        else {
            guard !Task.isCancelled else { return }
            apply { $0.connectFailed(.absent, now: $1) }
            return
        }
        // Adapters report a board one after another (and not while they connect): one with
        // room may not have heard it yet. Rather than free a slot on a full adapter (a
        // disconnect and a connect), wait briefly for one of them to hear it; for a connect
        // nobody waits for, wait for the adapters lately started, to settle where it is
        // heard best.
        let waitOn = choice.full ? choice.roomWhereUnheard : (command ? [] : choice.freshRoomWhereUnheard)
        if !waitOn.isEmpty {
            choice.adapter.unclaim(address)
            if choice.full { await context.kickDiscovery(on: waitOn) }
            await context.waitUntilHeard(address, on: waitOn, all: !choice.full, within: Self.placementWait)
            guard !Task.isCancelled,
                let again = await context.placement(for: address, link: linkAdapter, rssi: live.current.rssiByAdapter)
            else {
                if !Task.isCancelled { apply { $0.connectFailed(.absent, now: $1) } }
                return
            }
            choice = again
        }
        // Every adapter that had reported the board by now was looked at (placement skips
        // one it cannot use, or whose device BlueZ no longer shows): only an adapter that
        // reports it after this wakes it from standby, else placement and the wake-up would
        // hand it back and forth without end (the simulation found that: a busy loop).
        placedAmong = choice.heard.union(devices.keys)
        let adapter = choice.adapter
        let full = choice.full
        let device = choice.device
        defer { adapter.unclaim(address) }
        // Discovery stays off on that adapter from the moment a connect is wanted until the
        // last queued one is done: connecting while discovering waits for a discovery-window
        // boundary.
        await adapter.discovery.hold()
        do {
            try await adapter.scheduler.acquire()
        } catch {
            await adapter.discovery.release()
            return  // cancelled while queued: whoever cancelled has told the machine
        }
        // The boards waiting in line on this adapter (this one included) must stay known.
        let path = adapter.path
        let waiting = Set(adapter.placedBoards.map(\.rawValue) + [address.rawValue])
        await adapter.discovery.refreshIfPausedLong { tree in
            tree.devices(onAdapter: path).allSatisfy { !waiting.contains($0.address) || $0.hasLink || $0.rssi != nil }
        }
        // The permit goes back as soon as the link is up: the next connect on the adapter
        // runs while this board's services resolve (its slot stays counted: `linking`).
        let permit = ConnectPermit(adapter: adapter, rotation: full)
        let outcome = await attemptConnect(on: adapter, device: device, full: full, command: command) {
            permit.release(linked: true)
        }
        if case .connected = outcome { permit.resolved() }
        // A connect that got no answer at all: the controller is asked at once, the permit
        // still held so that no other connect queues in front of the question (a controller
        // that stops answering leaves every connect pending until it times out, and keeps
        // the periodic question away: that waits for an adapter connecting nothing).
        if case .failed(.timeout) = outcome, !Task.isCancelled { await context.gotNoAnswer(to: .connect, for: address, onAdapter: adapter.path) }
        permit.release()
        await adapter.discovery.release()
        guard !Task.isCancelled else { return }
        switch outcome {
        case .connected:
            // Whether the connect worked is told when the link has lasted (`linkSettled`).
            apply { $0.connectSucceeded(now: $1) }
            apply { $0.servicesResolved(now: $1) }
        case .noSlot:
            logger.debug("every connection slot is taken; waiting in standby", metadata: ["ble.adapter": "\(adapter.name)"])
            apply { $0.slotUnavailable(now: $1) }
            // A command that came while this connect finished is served as a command.
            if !waiters.isEmpty { apply { $0.connectRequested(reason: .command, now: $1) } }
        case .failed(let error):
            let errorClass = ConnectErrorClass(error)
            // The journal says a streak of failures once: its first at warning, the retries
            // that fail the same way at debug, and the success that ends it (above).
            logger.log(
                level: machine.failedAttempts == 0 ? .warning : .debug,
                "connect failed",
                metadata: ["error": "\(error)", "error.class": "\(errorClass.rawValue)", "ble.adapter": "\(adapter.name)"])
            if errorClass != .outOfResources { adapter.noteFailure(of: address) }
            if errorClass == .transient || errorClass == .permanent { context.connectFailed(address, on: adapter) }
            if machine.phase == .connecting { linkAdapter = nil }
            connectedThrough = nil
            // A link BlueZ shows that never resolved (the kernel kept it while bluetoothd
            // restarted, or the connect was half made): released, so the retry starts clean
            // and no link is left that the fleet does not use.
            if errorClass == .transient, await context.client.mirror.tree.device(at: device.path)?.hasLink == true {
                logger.info("releasing a link that never resolved", metadata: ["ble.adapter": "\(adapter.name)"])
                try? await context.client.disconnect(device)
            }
            apply { $0.connectFailed(errorClass, now: $1) }
        }
    }

    /// With `adapter`'s connect permit held: take a link slot there, then connect until
    /// resolved; `linkUp` is called once the link is up (the permit may go back then).
    /// `full`: placement found no free slot anywhere (a command may evict).
    private func attemptConnect(
        on adapter: FleetAdapter, device: BlueZDevice, full: Bool, command: Bool,
        linkUp: @escaping @Sendable () -> Void
    ) async -> ConnectOutcome {
        guard !Task.isCancelled else { return .failed(.timeout("cancelled")) }
        // A command may have come while the automatic connect was queued.
        let command = command || !waiters.isEmpty
        guard await adapter.reserveSlot(for: address, command: command, in: context) else {
            // Nothing called Connect: without a command, the board waits its turn; a command
            // finds every link busy with work.
            guard command, waiters.isEmpty == false else { return .noSlot }
            return .failed(.connectionFailed(
                .concurrentConnectionLimit, "all \(adapter.limit) connection slots of \(adapter.name) are in use"))
        }
        // Its slot is held from here until its connect is done (``FleetAdapter/unclaim(_:)``).
        adapter.linking(address)
        // Placement read the device from the mirror; the fleet may not have handed it here yet.
        if devices[adapter.path] == nil { devices[adapter.path] = device }
        linkAdapter = adapter.path
        connectedThrough = adapter
        logger[metadataKey: "ble.adapter"] = "\(adapter.name)"
        apply { $0.connectAttemptStarted(now: $1) }
        do {
            try await context.client.connect(device, timeout: context.configuration.connectTimeout, linkUp: linkUp)
            return .connected
        } catch {
            return .failed(BlueZError(error))
        }
    }

    /// How one connect attempt ended.
    enum ConnectOutcome {
        case connected
        /// No connection slot, and nobody waits for the board: no `Connect` was called.
        case noSlot
        case failed(BlueZError)
    }

    /// Services are resolved on `link`: looks up the profile's characteristics there (the
    /// profile the device offers now), and tells the machine.
    private func prepare(link: UInt64) async {
        guard link == machine.link else { return }
        guard let device = await linkedDevice() else {
            // Resolved, yet no device of ours holds the link (it went meanwhile): the machine
            // must learn it, or calls would wait for it forever.
            logger.debug("resolved without a link BlueZ shows; treating the link as lost")
            apply { $0.linkMissing(link: link, now: $1) }
            return
        }
        let profile = context.profiles.profile(offering: device.uuids) ?? self.profile
        let found = await Self.characteristics(of: profile, on: device, in: context.client.mirror)
        guard link == machine.link else { return }
        self.profile = profile
        handles = found
        let missing = profile.characteristics.map(\.name).filter { found[$0] == nil }
        if !missing.isEmpty {
            logger.notice(
                "board lacks characteristics of its profile",
                metadata: ["ble.device": "\(device.path)", "profile": "\(profile.name)", "missing": "\(missing)"])
        }
        apply { $0.characteristicsFound(link: link, now: $1) }
    }

    /// The board is usable: waiters go on, its sensors are followed, its LED put back.
    private func becameReady() {
        lastUsed = clock.now
        // A link that came up is one a call waiting for a free link may look at again.
        context.slotsChanged.notify()
        logger.info("board ready", metadata: ["profile": "\(profile.name)"])
        resumeWaiters()
        let link = machine.link
        Task { [weak self, clock] in
            guard (try? await clock.sleep(for: BoardStateMachine.settleTime)) != nil else { return }
            await self?.apply { $0.linkSettled(link: link, now: $1) }
        }
        followSensors(of: profile, link: link)
        putDesiredLEDBack(link: link)
    }

    /// The device of the board's link: the one on ``linkAdapter`` when BlueZ shows a link
    /// there, else (the link was adopted or moved) any of the board's devices with a link,
    /// which then becomes ``linkAdapter``.
    private func linkedDevice() async -> BlueZDevice? {
        let tree = await context.client.mirror.tree
        if let device, tree.device(at: device.path)?.hasLink == true { return device }
        for (adapter, known) in devices {
            guard let current = tree.device(at: known.path), current.hasLink else { continue }
            devices[adapter] = current
            linkAdapter = adapter
            return current
        }
        return nil
    }

    /// How long a resolved board's characteristics may take to show in the mirror.
    static let handlesWait: Duration = .seconds(3)

    /// The characteristics of `profile` under `device`, by name, once the mirror shows them
    /// all (BlueZ exports them with the resolve, but the mirror may see the resolve first),
    /// or those it shows after ``handlesWait`` or when the link goes.
    static func characteristics(
        of profile: BoardProfile, on device: BlueZDevice, in mirror: BlueZObjectMirror
    ) async -> [String: BlueZCharacteristic] {
        let path = device.path
        @Sendable func lookUp(_ tree: BlueZObjectTree) -> [String: BlueZCharacteristic] {
            var found: [String: BlueZCharacteristic] = [:]
            for wanted in profile.characteristics {
                found[wanted.name] = tree.characteristic(
                    device: path, service: wanted.service.bluetooth, characteristic: wanted.uuid.bluetooth)
            }
            return found
        }
        _ = try? await mirror.wait(timeout: handlesWait, description: "the characteristics of \(device.address)") {
            snapshot -> MirrorWaitStep<Bool> in
            guard snapshot.tree.device(at: path)?.hasLink == true else { return .done(false) }
            return lookUp(snapshot.tree).count == profile.characteristics.count ? .done(true) : .pending
        }
        return lookUp(await mirror.tree)
    }

    /// Subscribes to every sensor of `profile` that notifies.
    func followSensors(of profile: BoardProfile, link: UInt64) {
        for sensor in profile.sensors where sensor.access.contains(.notify) {
            guard let handle = handles[sensor.name] else { continue }
            Task { await self.startNotifications(of: sensor, handle, link: link) }
        }
    }

    /// Subscribes to a sensor: each value is recorded where it arrives, on the BlueZ mirror
    /// (``record(_:of:into:events:address:logger:)``), without a hand-off to this actor.
    private func startNotifications(
        of sensor: BoardProfile.Characteristic, _ characteristic: BlueZCharacteristic, link: UInt64
    ) async {
        let live = self.live
        let events = context.events
        let address = self.address
        let logger = self.logger
        // What the link carries tells its adapter's health that the controller still works.
        let adapter = linkAdapter
        do {
            let session = try await context.client.notifications(
                characteristic,
                onValue: {
                    if let adapter { live.carried(through: adapter) }
                    Board.record($0, of: sensor, into: live, events: events, address: address, logger: logger)
                },
                onEnd: { error in
                    logger.debug("\(sensor.name) notifications ended", metadata: ["error": "\(error)"])
                })
            guard link == machine.link else {
                session.cancel()
                return
            }
            notifySessions.append(session)
        } catch {
            guard link == machine.link, !(error is CancellationError) else { return }
            logger.debug("could not subscribe to \(sensor.name) notifications", metadata: ["error": "\(error)"])
        }
    }

    /// Records a sensor's value (from a read, or a notification); nil when the bytes do not
    /// fit the sensor's format.
    @discardableResult
    func record(_ bytes: [UInt8], of sensor: BoardProfile.Characteristic) -> SensorReading? {
        Board.record(bytes, of: sensor, into: live, events: context.events, address: address, logger: logger)
    }

    @discardableResult
    private nonisolated static func record(
        _ bytes: [UInt8], of sensor: BoardProfile.Characteristic, into live: BoardLive,
        events: EventBroadcaster<FleetEvent>, address: BoardAddress, logger: Logger
    ) -> SensorReading? {
        guard let value = sensor.decode(bytes) else {
            logger.warning(
                "ignored a \(sensor.name) value that does not fit its format",
                metadata: ["bytes": "\(bytes.count)", "format": "\(sensor.format.rawValue)"])
            return nil
        }
        let reading = SensorReading(value: value, receivedAt: live.now)
        live.setReading(reading, of: sensor.name)
        if sensor.name == BoardProfile.temperatureSensor {
            events.publish(.temperature(address, reading.celsius))
        } else {
            events.publish(.sensor(address, name: sensor.name, value: value, unit: sensor.unit))
        }
        return reading
    }

    /// Writes the LED state last asked for (the board may have rebooted, LED off) on a link
    /// that just became ready.
    private func putDesiredLEDBack(link: UInt64) {
        guard desiredLED != .unknown, let switchLED = profile.switch(named: BoardProfile.ledSwitch),
            let led = handles[switchLED.name]
        else { return }
        // Work on the board like a call's, from now: its link is not given away before it is done.
        machine.workStarted()
        Task { await self.write(desiredLED == .on, to: led, of: switchLED, link: link) }
    }

    private func write(_ on: Bool, to led: BlueZCharacteristic, of switchLED: BoardProfile.Characteristic, link: UInt64) async {
        defer { workEnded() }
        do {
            try await gattQueue.acquire()
            defer { gattQueue.release() }
            try await context.client.writeValue(switchLED.encode(on: on), to: led, type: .request)
            guard link == machine.link else { return }
            appliedLED = on
            logger.info("LED re-applied", metadata: ["led": "\(on ? "on" : "off")"])
            context.events.publish(.ledApplied(address, on: on))
        } catch {
            logger.warning("could not re-apply the LED", metadata: ["error": "\(error)"])
        }
    }

    /// Work on the board ended: once none is left, its link may be given to another board.
    func workEnded() {
        if machine.workEnded() { context.slotsChanged.notify() }
    }

    // MARK: Waiters

    /// Returns once the board is ready (connecting it if needed); throws the `FleetError` that
    /// keeps it from being ready, or `CancellationError` when the caller gives up.
    func ensureReady() async throws {
        if machine.isReady { return }
        nextWaiterID &+= 1
        let id = nextWaiterID
        let now = clock.now
        let moving = machine.isMoving(at: now)
        let relinking = moving ? nil : machine.relinkGraceLeft(at: now)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiters[id] = continuation
                // A moving board is about to be heard elsewhere: its advertisement connects it.
                // One whose link fell moments ago is waited for (it advertises again, or its
                // adapter's loss is told and it moves) before it is called absent.
                if !machine.isReady && !moving {
                    if let relinking {
                        Task { [weak self, clock] in
                            guard (try? await clock.sleep(for: relinking)) != nil else { return }
                            await self?.relinkGraceEnded()
                        }
                    } else {
                        apply { $0.connectRequested(reason: .command, now: $1) }
                    }
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    /// The grace a call gave a board whose link fell has passed: a board still not ready,
    /// and not moving, is connected for the call now, or the call is told why not.
    private func relinkGraceEnded() {
        guard !waiters.isEmpty, !machine.isReady, !machine.isMoving(at: clock.now) else { return }
        apply { $0.connectRequested(reason: .command, now: $1) }
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

    /// `last seen 12 s ago`, for an absent board's answer.
    private var lastSeenText: String {
        guard let seen = live.current.lastSeen else { return "not seen since the daemon started" }
        let seconds = Int(clock.since(seen).components.seconds)
        let ago =
            switch seconds {
            case ..<120: "\(seconds) s"
            case ..<7200: "\(seconds / 60) min"
            default: "\(seconds / 3600) h"
            }
        return "last seen \(ago) ago"
    }

    private func message(for code: FleetErrorCode) -> String {
        switch code {
        case .absent: "\(address) is not advertising (powered off or out of range?); \(lastSeenText)."
        case .adapterOff: "The Bluetooth adapter is powered off or missing."
        case .bluezUnavailable: "BlueZ (bluetoothd) is not running."
        case .cancelled: "A disconnect of \(address) was requested meanwhile."
        case .notFound: "\(address) was forgotten."
        case .failed: "\(address) refused the connection (\(machine.lastFailure?.rawValue ?? "permanent error"))."
        default: "\(address) could not be connected (\(code.rawValue))."
        }
    }
}
