import BlueZ
import Logging

/// What a board knows and decides: its link's lifecycle (``BoardStateMachine``), its
/// adapters (``BoardDevices``: the one map of them, kept in its ``BoardLive``, where the
/// mirror records their advertisements), how its switches should stand (``BoardSwitches``)
/// and its profile. Its inputs are what BlueZ, the adapters, its connect,
/// the calls and its timers tell it, each at a time `now`; each records what the board must
/// do (``Effect``), in order, which the ``Board`` actor takes and performs. No I/O and no
/// clock of its own: tested without BlueZ.
struct BoardCore {
    private(set) var machine: BoardStateMachine
    /// Where its adapters' devices are kept (with what each adapter heard of it).
    let live: BoardLive
    private(set) var switches: BoardSwitches
    /// The kind of board: the profile whose advertised service its device offers.
    private(set) var profile: BoardProfile
    /// Work running on the board (a call's operation, the LED put back): a busy board's
    /// link is never given away. Not the machine's: no transition depends on it.
    private(set) var work = 0
    /// Whether an adapter (path) has a free connection slot now (the fleet's count, asked).
    private let hasRoom: @Sendable (AdapterPath) -> Bool
    private var effects: [Effect] = []

    /// What the board must do for an input, in the order it was decided.
    enum Effect: Sendable {
        /// The machine's phase or the adapter of its link moved: the tally, the journal and
        /// the fleet's events hear it.
        case changed(from: BoardPhase, to: BoardPhase, linkAdapter: AdapterPath?, linkMoved: Bool)
        /// What an input that may start a connect asks.
        case connect(BoardStateMachine.ConnectAction)
        /// What a step of the link coming up asks.
        case linkUp(BoardStateMachine.LinkUpAction)
        /// What a connect's outcome or a link's end asks, with the device of the link when it
        /// was decided.
        case outcome(BoardStateMachine.OutcomeAction, device: BlueZDevice?)
        /// What an end of the link or connect from outside asks, with the device of the link
        /// when it was decided.
        case teardown(BoardStateMachine.TeardownAction, device: BlueZDevice?)
        /// A link the board does not use (a second one, or one through a stuck adapter) is closed.
        case close(BlueZDevice)
        /// The LED was written `on` (a call's, or put back): the fleet's events hear it.
        case ledApplied(on: Bool)
        case log(Logger.Level, Logger.Message, Logger.Metadata)
    }

    init(machine: BoardStateMachine, live: BoardLive, switches: BoardSwitches, profile: BoardProfile, hasRoom: @escaping @Sendable (AdapterPath) -> Bool) {
        self.machine = machine
        self.live = live
        self.switches = switches
        self.profile = profile
        self.hasRoom = hasRoom
    }

    /// What was decided since the last call, to perform in order.
    mutating func takeEffects() -> [Effect] {
        defer { effects = [] }
        return effects
    }

    /// The adapter of the board's link, of the connect in progress, or of the link going down.
    var linkAdapter: AdapterPath? { machine.linkAdapter }
    /// The board's adapters, each with its device object, now.
    var devices: BoardDevices { live.devices }
    /// The device object the link goes through.
    var device: BlueZDevice? { linkAdapter.flatMap { devices[$0] } }
    /// Whether work runs on the board.
    var isBusy: Bool { work > 0 }

    // MARK: The machine

    /// Feeds the machine one input, the one way it changes: records what moved, then, when
    /// the input asks for something, `record` records it.
    private mutating func transition<Action>(
        now: ContinuousClock.Instant, _ input: (inout BoardStateMachine) -> Action?, record: (inout BoardCore, Action) -> Void
    ) {
        let before = machine.phase
        let linkBefore = machine.linkAdapter
        let action = input(&machine)
        let linkMoved = machine.linkAdapter != linkBefore
        if before != machine.phase || linkMoved {
            effects.append(.changed(from: before, to: machine.phase, linkAdapter: machine.linkAdapter, linkMoved: linkMoved))
        }
        if let action { record(&self, action) }
        // Entering standby asks for nothing (no slot, or the slot given away): looked at
        // whatever the input returned.
        if before != .standby, machine.phase == .standby { wakeIfHeardWhereRoomIs(now: now) }
    }

    /// An input that asks for nothing.
    private mutating func plainInput(now: ContinuousClock.Instant, _ input: (inout BoardStateMachine) -> Void) {
        transition(now: now, { machine -> Never? in input(&machine); return nil }, record: { _, _ in })
    }

    /// An input that may start a connect.
    private mutating func connectInput(now: ContinuousClock.Instant, _ input: (inout BoardStateMachine) -> BoardStateMachine.ConnectAction?) {
        transition(now: now, input) { core, action in
            if case .startTimer(let timer) = action { core.logRetry(timer) }
            core.effects.append(.connect(action))
        }
    }

    /// A step of the link coming up.
    private mutating func linkUpInput(now: ContinuousClock.Instant, _ input: (inout BoardStateMachine) -> BoardStateMachine.LinkUpAction?) {
        transition(now: now, input) { core, action in
            if case .linkSettled(let failures, _) = action {
                if failures > 0 {
                    core.log(.info, "connected after \(failures) failed attempt\(failures == 1 ? "" : "s")")
                } else {
                    core.log(.debug, "link settled")
                }
            }
            core.effects.append(.linkUp(action))
        }
    }

    /// A connect's outcome, or the link's end.
    private mutating func outcomeInput(now: ContinuousClock.Instant, _ input: (inout BoardStateMachine) -> BoardStateMachine.OutcomeAction?) {
        transition(now: now, input) { core, action in
            switch action {
            case .startTimer(let timer): core.logRetry(timer)
            case .waitForAdvertisement: core.log(.info, "waiting for the board to advertise again")
            default: break
            }
            core.effects.append(.outcome(action, device: core.device))
        }
    }

    /// The link, or the connect, ended from outside.
    private mutating func teardownInput(now: ContinuousClock.Instant, _ input: (inout BoardStateMachine) -> BoardStateMachine.TeardownAction?) {
        transition(now: now, input) { core, action in
            core.effects.append(.teardown(action, device: core.device))
        }
    }

    /// A retry: said once a streak of failures (its first retry); the rest at debug.
    private mutating func logRetry(_ timer: BoardStateMachine.Timer) {
        guard case .retry = timer.kind else { return }
        log(machine.failedAttempts <= 1 ? .info : .debug, "retrying connect later", [
            "retry.delay": "\(timer.after)", "retry.attempts": "\(machine.failedAttempts)",
            "retry.reason": "\(machine.lastFailure?.rawValue ?? "link lost")",
        ])
    }

    private mutating func log(_ level: Logger.Level, _ message: Logger.Message, _ metadata: Logger.Metadata = [:]) {
        effects.append(.log(level, message, metadata))
    }

    // MARK: What the fleet, the calls and the timers ask

    /// The fleet (`automatic`) or a command wants the board connected.
    mutating func connectRequested(reason: BoardStateMachine.ConnectReason, now: ContinuousClock.Instant) {
        connectInput(now: now) { $0.connectRequested(reason: reason, now: now) }
    }

    /// A call waits for the board to become ready (``BoardStateMachine/callWaiting(now:)``).
    mutating func callWaiting(now: ContinuousClock.Instant) {
        connectInput(now: now) { $0.callWaiting(now: now) }
    }

    /// A timer the machine asked for fired; `awaited`: a call waits for the board.
    mutating func timerFired(_ timer: BoardStateMachine.Timer, awaited: Bool, now: ContinuousClock.Instant) {
        switch timer.kind {
        case .retry(let token): connectInput(now: now) { $0.retryTimerFired(token: token, now: now) }
        case .settle(let link): linkUpInput(now: now) { $0.settleTimerFired(link: link, now: now) }
        case .relinkGrace: connectInput(now: now) { $0.relinkGraceEnded(awaited: awaited, now: now) }
        }
    }

    /// A connection slot freed, or an adapter came: a board waiting for one tries now.
    mutating func connectionRoomAppeared(now: ContinuousClock.Instant) {
        connectInput(now: now) { $0.connectionRoomAppeared(now: now) }
    }

    /// The adapters were powered on or off.
    mutating func adapterPowered(_ on: Bool, now: ContinuousClock.Instant) {
        if on {
            connectInput(now: now) { $0.adapterPoweredOn(now: now) }
        } else {
            teardownInput(now: now) { $0.adapterPoweredOff(now: now) }
        }
    }

    /// A user, or the rotation (`evicted`), wants the board disconnected.
    mutating func disconnectRequested(evicted: Bool, now: ContinuousClock.Instant) {
        teardownInput(now: now) { $0.disconnectRequested(now: now, evicted: evicted) }
    }

    /// The board is removed from the fleet.
    mutating func forget(now: ContinuousClock.Instant) {
        teardownInput(now: now) { $0.forget(now: now) }
    }

    /// An operation found the link of the board's ready session down (BlueZ shows it): the
    /// machine has it too, before BlueZ's report of it comes (then a no-op).
    mutating func linkWentDown(now: ContinuousClock.Instant) {
        outcomeInput(now: now) { $0.disconnected(now: now) }
    }

    /// A call used the board's link.
    mutating func linkUsed(now: ContinuousClock.Instant) {
        plainInput(now: now) { $0.linkUsed(now: now) }
    }

    /// A call's operation, or the LED put back, starts on the board: its link is not given away.
    mutating func workStarted() {
        work += 1
    }

    /// That work ended (once none is left, ``isBusy`` is false: its link may be given away).
    mutating func workEnded() {
        work = max(0, work - 1)
    }

    // MARK: Its link coming up

    /// The profile's characteristics on link `link` were looked up, for `profile` (the one
    /// its device offers now): the board takes that profile, and is usable.
    mutating func characteristicsFound(link: UInt64, profile: BoardProfile, now: ContinuousClock.Instant) {
        self.profile = profile
        linkUpInput(now: now) { $0.characteristicsFound(link: link, now: now) }
    }

    /// BlueZ shows no link for link `link`, whose characteristics were to be looked up.
    mutating func linkMissing(link: UInt64, now: ContinuousClock.Instant) {
        outcomeInput(now: now) { $0.linkMissing(link: link, now: now) }
    }

    /// The profiles changed: the board takes `profile` (a ready board looks up its
    /// characteristics at once, any other at its next connect).
    mutating func profileChanged(to profile: BoardProfile) {
        self.profile = profile
    }

    // MARK: What BlueZ reports

    /// BlueZ added one of the board's device objects (one per adapter that knows it) or
    /// changed its properties (`changed`; all of them for a new object). Returns whether it
    /// tells the board was heard (a new object, or an advertisement's properties).
    mutating func deviceUpdated(_ device: BlueZDevice, changed: Set<BlueZDevice.Property>, now: ContinuousClock.Instant) -> Bool {
        let adapter = device.adapterPath
        let heard = live.report(device, changed: changed, now: now)
        if heard {
            connectInput(now: now) { $0.advertisementSeen(now: now) }
            // A board waiting for a slot, newly heard by an adapter with room: its turn.
            if machine.phase == .standby, hasRoom(adapter) { connectInput(now: now) { $0.connectionRoomAppeared(now: now) } }
        }
        switch BoardDevices.link(of: device, changed: changed, linkAdapter: linkAdapter) {
        case nil:
            break
        case .up(let resolved):
            plainInput(now: now) { $0.connectSucceeded(through: adapter, now: now) }
            if resolved, linkAdapter == adapter { linkUpInput(now: now) { $0.servicesResolved(now: now) } }
        case .down:
            let usable = machine.isReady
            outcomeInput(now: now) { $0.disconnected(now: now) }
            // Said once; a link that fell as soon as it came up was told as a failed connect.
            if usable, machine.lastFailure == nil { log(.info, "link lost", ["ble.adapter": "\(adapter.name)"]) }
        case .stray:
            // A second link to the board (left by an earlier run, or made by someone else)
            // only takes a slot: the board is used through one.
            log(.info, "closing a second link to the board", ["stray.adapter": "\(adapter.name)"])
            effects.append(.close(device))
        }
        return heard
    }

    /// A board that enters standby (its connect found every slot it could use taken, or it
    /// gave its slot to another) while an adapter that knows it has room (one that reported
    /// it meanwhile, e.g. just plugged in, or a slot freed): its turn, at once. The
    /// advertisement that told it was seen before standby, so it wakes nobody later. Room is
    /// the adapter's ledger's answer, which placement also asks: a board woken by it is placed
    /// there, never handed back to standby.
    private mutating func wakeIfHeardWhereRoomIs(now: ContinuousClock.Instant) {
        guard let adapter = devices.adapters.first(where: hasRoom) else { return }
        log(.debug, "an adapter that heard it has room; connecting", ["ble.adapter": "\(adapter.name)"])
        connectInput(now: now) { $0.connectionRoomAppeared(now: now) }
    }

    /// BlueZ removed the board's device object on `adapter` (it expired, was removed, the
    /// adapter went, or BlueZ did); whether the board knew it. The board is gone when no
    /// adapter knows it any more; a link through that adapter is lost.
    mutating func deviceRemoved(adapter: AdapterPath, now: ContinuousClock.Instant) -> Bool {
        guard live.withDevices({ $0.remove(adapter: adapter) }) else { return false }
        if devices.isEmpty {
            teardownInput(now: now) { $0.deviceVanished(now: now) }
        } else if adapter == linkAdapter {
            outcomeInput(now: now) { $0.disconnected(now: now, withAdapter: true) }
        }
        return true
    }

    /// BlueZ went away, every device object with it; whether the board knew any.
    mutating func allDevicesRemoved(now: ContinuousClock.Instant) -> Bool {
        guard live.withDevices({ $0.removeAll() }) else { return false }
        teardownInput(now: now) { $0.deviceVanished(now: now) }
        return true
    }

    /// The device that holds the board's link in `tree`: the one on ``linkAdapter`` when
    /// BlueZ shows a link there, else (the link was adopted or moved) any of the board's
    /// devices with a link, whose adapter is the link's from now on.
    mutating func linkedDevice(in tree: BlueZObjectTree, now: ContinuousClock.Instant) -> BlueZDevice? {
        guard let linked = live.withDevices({ $0.linked(in: tree, preferring: linkAdapter) }) else { return nil }
        if linked.adapterPath != linkAdapter { plainInput(now: now) { $0.linkFound(through: linked.adapterPath) } }
        return linked
    }

    // MARK: What the adapters tell

    /// An adapter the fleet used went (powered off, unplugged). A board whose link went
    /// with it is not gone: it reconnects through another adapter, at once where one knows
    /// it, else when one hears it.
    mutating func adapterLost(_ path: AdapterPath, now: ContinuousClock.Instant) {
        guard machine.lastLinkAdapter == path else { return }
        if linkAdapter == path { outcomeInput(now: now) { $0.disconnected(now: now, withAdapter: true) } }
        // A young link that fell with its adapter, BlueZ reporting the link down first, was
        // no failed connect either.
        plainInput(now: now) { $0.linkLossForgiven() }
        let heardElsewhere = devices.known(besides: path)
        connectInput(now: now) { $0.linkAdapterWent(heardElsewhere: heardElsewhere, now: now) }
    }

    /// The adapter of the board's link stopped answering: nothing goes through the link any
    /// more. The board moves to another adapter that hears it, as if its adapter went, and
    /// the link is released: a recovery that resets the controller ends it anyway, but one
    /// that only restarts discovery (an adapter that hears nothing) does not, and a board
    /// with a link does not advertise: it would stay linked where the fleet no longer looks,
    /// called absent, for good (the simulation found that).
    /// `answersNothing`: the controller answers no command, or is about to be reset through
    /// the kernel (which ends every link): the link is left to that, not released through
    /// it (a release the controller leaves unanswered holds the kernel's command queue, and
    /// the reset waits behind it: 1 to 4 s on the real lane, issue 52).
    mutating func adapterStuck(_ path: AdapterPath, answersNothing: Bool = false, now: ContinuousClock.Instant) {
        guard linkAdapter == path else { return }
        log(.info, "moving off a stuck adapter", ["ble.adapter": "\(path.name)"])
        if let device, !answersNothing { effects.append(.close(device)) }
        adapterLost(path, now: now)
    }

    // MARK: Its connect

    /// The connect through `adapter` got its slot there and calls `Device1.Connect` on
    /// `device` (which placement read from the mirror: the fleet may not have reported it yet).
    mutating func connectStarts(through adapter: AdapterPath, device: BlueZDevice, now: ContinuousClock.Instant) {
        live.withDevices { $0.connecting(through: device) }
        plainInput(now: now) { $0.connectAttemptStarted(through: adapter, now: now) }
    }

    /// What the board's connect came to; `awaited`: a call waits for the board.
    mutating func connectEnded(_ result: BoardConnect.Result, awaited: Bool, now: ContinuousClock.Instant) {
        switch result {
        case .connected(let adapter):
            // Whether the connect worked is told when the link has lasted (`linkSettled`).
            plainInput(now: now) { $0.connectSucceeded(through: adapter, now: now) }
            linkUpInput(now: now) { $0.servicesResolved(now: now) }
        case .noSlot(let adapter):
            log(.debug, "every connection slot is taken; waiting in standby", ["ble.adapter": "\(adapter.name)"])
            plainInput(now: now) { $0.slotUnavailable(now: now) }
            // A command that came while this connect finished is served as a command.
            if awaited { connectInput(now: now) { $0.connectRequested(reason: .command, now: now) } }
        case .absent:
            outcomeInput(now: now) { $0.connectFailed(.absent, now: now) }
        case .failed(let errorClass, let error, let adapter):
            // The journal says a streak of failures once: its first at warning, the retries
            // that fail the same way at debug, and the success that ends it.
            log(machine.failedAttempts == 0 ? .warning : .debug, "connect failed", [
                "error": "\(error)", "error.class": "\(errorClass.rawValue)", "ble.adapter": "\(adapter.name)",
            ])
            outcomeInput(now: now) { $0.connectFailed(errorClass, now: now) }
        }
    }

    /// The disconnect of the link through `path` returned (done, or given up): the board
    /// leaves `disconnecting` if it is still there for that link. Late, it changes nothing:
    /// the link's end was reported already, and the board may be linked again since (through
    /// another adapter, once the stuck one was reset), which it must not take for lost.
    mutating func disconnectReturned(from path: DevicePath?, now: ContinuousClock.Instant) {
        guard machine.phase == .disconnecting, device == nil || device?.path == path else { return }
        outcomeInput(now: now) { $0.disconnected(now: now) }
    }

    // MARK: Its switches

    /// The LED as a user wants it from now (put back whenever the board comes back).
    mutating func want(led: DesiredLED) {
        switches.desiredLED = led
    }

    /// Switch `name` was written `on` through `link`: for the LED, what the link carries now,
    /// and the fleet's events are told.
    mutating func switchWritten(_ name: String, on: Bool, link: UInt64, now: ContinuousClock.Instant) {
        guard linkCarries(name, on: on, link: link, now: now) else { return }
        effects.append(.ledApplied(on: on))
    }

    /// For the LED (``BoardSwitches/isLED(_:)``): `link` carries it `on` now. Whether `name` is the LED.
    private mutating func linkCarries(_ name: String, on: Bool, link: UInt64, now: ContinuousClock.Instant) -> Bool {
        guard BoardSwitches.isLED(name) else { return false }
        plainInput(now: now) { $0.ledWritten(on, link: link) }
        return true
    }

    /// An identify starts blinking switch `name`: until it ends, where the switch stands on
    /// the board is not known.
    mutating func blinkStarts(_ name: String) {
        switches.leftMidBlink = name
    }

    /// An identify's blink of switch `name` ended, the switch left `wanted` through `link`.
    mutating func blinkEnded(_ name: String, wanted: Bool, link: UInt64, now: ContinuousClock.Instant) {
        switches.leftMidBlink = nil
        _ = linkCarries(name, on: wanted, link: link, now: now)
        log(.info, "board identified", ["switch": "\(name)"])
    }

    /// A switch was put back `on` through `link` (``BoardSwitches``); whether that link is
    /// still the board's.
    mutating func switchPutBack(_ name: String, on: Bool, link: UInt64, now: ContinuousClock.Instant) -> Bool {
        guard link == machine.link else { return false }
        switches.putBack(name)
        log(.info, "switch put back", ["switch": "\(name)", "on": "\(on)"])
        switchWritten(name, on: on, link: link, now: now)
        return true
    }

    // MARK: What the fleet shows of it

    func snapshot(of board: BoardIdentity, live: BoardLive.State) -> BoardSnapshot {
        BoardSnapshot(
            address: board.address, name: board.name, alias: board.alias, phase: machine.phase,
            rssi: live.devices.bestRSSI, desiredLED: switches.desiredLED, appliedLED: machine.currentLink?.appliedLED,
            temperature: live.temperature, lastFailure: machine.lastFailure, lastSeen: live.lastSeen,
            adapter: live.devices.shown(link: linkAdapter)?.name, profile: profile,
            readings: live.readings)
    }

    /// The board's link as an eviction candidate: a link still coming up (connecting,
    /// resolving: the next connect on its adapter may run meanwhile) counts as busy, as does
    /// work on a ready one or a call waiting for it (`awaited`).
    func linkUsage(of address: BoardAddress, awaited: Bool, now: ContinuousClock.Instant) -> ConnectionSlots.Link {
        ConnectionSlots.Link(
            address: address, lastUsed: machine.currentLink?.lastUsed ?? now, isBusy: isBusy || awaited || !machine.isReady,
            isLeaving: machine.phase == .disconnecting)
    }
}
