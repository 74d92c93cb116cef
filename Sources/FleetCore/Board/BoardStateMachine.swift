import BlueZ

/// The connection lifecycle of one board as a plain value: inputs in, actions out, no I/O.
///
/// Its one user is ``BoardCore``, which feeds it every input (connect wanted,
/// Connected/ServicesResolved changes, failures, advertisements, adapter power, timers) and
/// records what each returns for the board actor to perform. Each input returns only the
/// actions it can produce (``ConnectAction``, ``LinkUpAction``, ``OutcomeAction``,
/// ``TeardownAction``; nil: nothing to do; an input that never asks for anything returns
/// nothing). Every timer (a retry, a link's settle time, a call's grace for a link that fell)
/// is an action it returns and an input it is told. Where the board is, and what is true
/// there only, is ``state`` (its cases carry their data, see ``State``); the few facts kept
/// beside it are those that outlive every state, each said below. Only its inputs change it.
/// The board's link is recorded here alone (``linkAdapter``, ``currentLink``). Rules it
/// guarantees:
/// - every retry goes through a delay ≥ ``ReconnectPolicy/minimumDelay`` (no busy loop);
/// - asking to connect a board that is connecting, resolving or ready is a no-op;
/// - a disconnect requested while connecting cancels the connect and fails its waiters
///   with ``FleetErrorCode/cancelled``; a connect requested while disconnecting runs after
///   the disconnect completes;
/// - with the adapter off nothing connects; power-on resumes boards that were wanted;
/// - an absent board waits for its next advertisement instead of retrying blindly.
///
/// An input that does not fit the state is one of two kinds:
/// - *stale*, and ignored by rule: it was true when it was sent but the board has moved on
///   since. The outcome of a connect the board cancelled or that someone else's link
///   overtook, a timer whose token or link no longer matches (or a settle timer early, or
///   again), the answer of a link that has ended (an older ``link`` number), BlueZ telling
///   again what the machine knows (Connected, ServicesResolved, a link down when none is up),
///   and anything after ``forget(now:)``;
/// - *impossible*: the machine's own rules say it cannot come (the characteristics of the
///   current link found outside `preparing`, or found missing outside `preparing` and
///   `ready`; the settle timer of the current link with no link). That is a bug in whoever
///   fed it: it is told to ``ruleViolated`` (by default an `assertionFailure`: tests and the
///   simulation stop at it) and otherwise ignored.
public struct BoardStateMachine: Sendable {
    /// Where the board is, with what is true there only.
    private(set) var state: State {
        didSet { if let linkAdapter { lastLinkAdapter = linkAdapter } }
    }
    /// Whether someone wants this board connected (cleared by a requested disconnect).
    /// Beside the state: a wish outlives every state the board goes through to honour it
    /// (connecting, a failure's backoff, an absence, an adapter off) and decides where each
    /// ends.
    private(set) var wanted: Bool = false
    /// The streak of failed connects since the last that worked (its length, its backoff).
    /// Beside the state: a streak runs through connecting, backing off, a link that fell at
    /// once and an absence; a link that lasted ends it (``settleTimerFired(link:now:)``).
    private var backoff: ReconnectBackoff
    /// The error class of the last failed connect, if any since services were last resolved:
    /// what the board shows (``BoardSnapshot/lastFailure``), whatever its state.
    private(set) var lastFailure: ConnectErrorClass?
    /// The number of the last retry timer: a timer whose token is not that of the
    /// `backingOff` state is an older one. Beside the state: numbers must never repeat.
    private var lastToken: UInt64 = 0
    /// The current link's number, bumped whenever a link (or a connect) ends: work that
    /// belongs to an older link (its session, its lookup, its writes, its settle timer) can
    /// tell it is stale. Beside the state: numbers must never repeat.
    private(set) var link: UInt64 = 0
    /// The adapter of the board's last link, or last connect (of the last state that had
    /// one: ``linkAdapter``, kept as `state` changes): when that adapter goes, the board
    /// moves (``linkAdapterWent(heardElsewhere:now:)``). Beside the state: it is kept after
    /// the link, whatever state the board is in by then.
    private(set) var lastLinkAdapter: AdapterPath?
    /// When the board's last link went with its adapter: for ``moveGrace`` after it, a
    /// connect that finds no adapter hearing the board yet leaves it moving (a call waits for
    /// it), not absent, whatever states it went through meanwhile.
    private var movedAt: ContinuousClock.Instant?

    /// How long a board whose adapter went counts as moving, not gone.
    static let moveGrace: Duration = .seconds(10)
    /// How long after its link fell a board that waits for its advertisement counts as just
    /// disconnected, not absent: a call waits that long for it. Its adapter's loss (the board
    /// then moves) may be told moments after the link's, and a board that is still there
    /// advertises again at once; one switched off is told absent after it.
    static let relinkGrace: Duration = .milliseconds(500)
    /// How long a link must last, from its resolve, for its connect to count as one that
    /// worked. A link lost sooner came up and fell (a controller's `0x3e` "Connection Failed
    /// to be Established", a MIC failure, a supervision timeout at once): a failed connect,
    /// counted in the board's streak and against its adapter, not a board gone.
    public static let settleTime: Duration = .seconds(3)

    /// A board found by discovery (present) or loaded from the registry (not yet seen:
    /// `present == false`, it starts absent).
    init(
        policy: ReconnectPolicy = ReconnectPolicy(),
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        present: Bool = true,
        adapterPowered: Bool = true,
        now: ContinuousClock.Instant
    ) {
        backoff = ReconnectBackoff(policy: policy, random: random)
        if !adapterPowered {
            state = .waitingForAdapter(present: present)
        } else {
            state = present ? .idle : .absent(Absence(since: now))
        }
    }

    /// Consecutive failed attempts since the last success.
    var failedAttempts: Int { backoff.attempts }

    /// Whether the board's link went with its adapter within ``moveGrace`` before `now`.
    func movedLately(at now: ContinuousClock.Instant) -> Bool {
        movedAt.map { $0.duration(to: now) < Self.moveGrace } ?? false
    }

    // MARK: - Rules broken

    /// An input that the machine's rules say cannot come in its state.
    struct RuleViolation: Sendable, Equatable, CustomStringConvertible {
        /// The input, and why it cannot come.
        var input: String
        /// The state it came in.
        var state: State
        var description: String { "board state machine: \(input), in state \(state)" }
    }

    /// Where a broken rule is told. Unset (always, but in a test that breaks one on
    /// purpose), it is an `assertionFailure`: a debug build (tests, the simulation) stops
    /// there; a release build ignores the input, as it does a stale one.
    @TaskLocal static var ruleViolated: (@Sendable (RuleViolation) -> Void)?

    private func impossible(_ input: String) {
        let violation = RuleViolation(input: input, state: state)
        if let told = Self.ruleViolated {
            told(violation)
        } else {
            assertionFailure(violation.description)
        }
    }
}

// MARK: - A connect wanted

extension BoardStateMachine {
    /// A command or the auto-connect policy needs the board connected.
    /// When it returns nil and ``isReady`` is true, proceed at once; otherwise wait for
    /// ``LinkUpAction/becomeReady(settle:)`` or waiters to be failed.
    mutating func connectRequested(reason: ConnectReason = .command, now: ContinuousClock.Instant) -> ConnectAction? {
        switch state {
        case .forgotten:
            return .failWaiters(.notFound)
        case .failed:
            guard reason == .command else { return nil }
            wanted = true
            backoff.reset()
            return beginConnect()
        case .idle:
            wanted = true
            return beginConnect()
        case .standby where reason == .command:
            // A command may free a slot (eviction): connect for it.
            wanted = true
            return beginConnect()
        case .standby:
            wanted = true
            return nil
        case .backingOff where reason == .command:
            // Someone waits: try now (a command may free a slot) rather than at the timer.
            wanted = true
            return beginConnect()
        case .connecting, .resolving, .preparing, .ready, .backingOff:
            wanted = true
            return nil
        case .disconnecting(let then, let adapter):
            wanted = true
            if then == .idle || (then == .standby && reason == .command) { state = .disconnecting(then: .reconnect, adapter: adapter) }
            return nil
        case .absent where isMoving(at: now):
            // Moving to another adapter that will hear it: the caller waits (its deadline
            // bounds the wait).
            wanted = true
            return nil
        case .absent:
            // Already waiting for its advertisement (said once, when it began): the caller
            // is told it is absent.
            wanted = true
            return .failWaiters(.absent)
        case .waitingForAdapter:
            wanted = true
            return .failWaiters(.adapterOff)
        }
    }

    /// A call waits for the board to become ready (it is not). A board moving to another
    /// adapter is connected by its advertisement there; one whose link fell moments ago is
    /// waited for (it advertises again, or its adapter's loss is told and it moves) before
    /// it is called absent; any other is connected for the call now.
    mutating func callWaiting(now: ContinuousClock.Instant) -> ConnectAction? {
        guard !isReady, !isMoving(at: now) else { return nil }
        if let left = relinkGraceLeft(at: now) { return .startTimer(Timer(kind: .relinkGrace, after: left)) }
        return connectRequested(reason: .command, now: now)
    }

    /// The grace a call gave a board whose link fell has passed (its timer fired); `awaited`:
    /// a call still waits for the board. A board still not ready, and not moving, is
    /// connected for the calls still waiting, or they are told why not.
    mutating func relinkGraceEnded(awaited: Bool, now: ContinuousClock.Instant) -> ConnectAction? {
        guard awaited, !isReady, !isMoving(at: now) else { return nil }
        return connectRequested(reason: .command, now: now)
    }

    /// The retry timer scheduled with `token` fired (an older one is stale).
    mutating func retryTimerFired(token: UInt64, now: ContinuousClock.Instant) -> ConnectAction? {
        guard case .backingOff(let current) = state, current == token else { return nil }
        guard wanted else {
            state = .idle
            return nil
        }
        return beginConnect()
    }

    /// The board advertised (device added, or RSSI/ManufacturerData changed).
    mutating func advertisementSeen(now: ContinuousClock.Instant) -> ConnectAction? {
        guard case .absent(let absence) = state else { return nil }
        let since = absence.since
        // Back after a link that fell at once: the streak goes on, with its backoff.
        let floor = absence.retryFloor ?? backoff.policy.minimumDelay
        if absence.retryFloor == nil { backoff.reset() }
        guard wanted else {
            state = .idle
            backoff.reset()
            return nil
        }
        let elapsed = since.duration(to: now)
        if elapsed >= floor { return beginConnect() }
        return .startTimer(backOff(for: floor - elapsed))
    }

    /// The adapter of the board's last link went (powered off, unplugged; its link, if any,
    /// is reported lost first): the board did not go, it moves to another adapter. One that
    /// already knows it (`heardElsewhere`) connects it; until one hears it, a call waits for
    /// it (``isMoving(at:)``) rather than be answered `absent`.
    mutating func linkAdapterWent(heardElsewhere: Bool, now: ContinuousClock.Instant) -> ConnectAction? {
        movedAt = now
        guard case .absent = state else { return nil }
        state = .absent(Absence(since: now, moving: true))
        return heardElsewhere ? advertisementSeen(now: now) : nil
    }

    /// An adapter came (plugged in, powered on) or a slot freed: a board waiting to retry, or
    /// waiting for a slot, tries now.
    mutating func connectionRoomAppeared(now: ContinuousClock.Instant) -> ConnectAction? {
        switch state {
        case .backingOff where wanted, .standby where wanted: beginConnect()
        default: nil
        }
    }

    /// The adapter was powered on: wanted boards that are present connect again.
    mutating func adapterPoweredOn(now: ContinuousClock.Instant) -> ConnectAction? {
        guard case .waitingForAdapter(let present) = state else { return nil }
        backoff.reset()
        guard present else {
            // A board moving off its adapter when it was powered off (reset, as a stuck one
            // is) is still about to be heard: a call waits for it as before.
            if let movedAt, movedLately(at: now) {
                state = .absent(Absence(since: movedAt, moving: true))
            } else {
                state = .absent(Absence(since: now))
            }
            return nil
        }
        guard wanted else {
            state = .idle
            return nil
        }
        return beginConnect()
    }
}

// MARK: - Its connect, and its link coming up

extension BoardStateMachine {
    /// The actor got the connect permit of the adapter at `adapter` and a slot there, and is
    /// calling `Device1.Connect`. Stale when the board no longer connects.
    mutating func connectAttemptStarted(through adapter: AdapterPath, now: ContinuousClock.Instant) {
        guard case .connecting = state else { return }
        state = .connecting(Attempt(adapter: adapter, startedAt: now))
    }

    /// The automatic connect found every connection slot of its adapter taken (and nobody
    /// waits for the board): it waits its turn in ``BoardPhase/standby``, without a
    /// connect call, a retry timer or a failure. More boards than slots is normal. Stale when
    /// the board no longer connects.
    mutating func slotUnavailable(now: ContinuousClock.Instant) {
        guard case .connecting = state else { return }
        state = .standby
    }

    /// `Connected` became true through the adapter at `adapter` (reply to Connect, or
    /// PropertiesChanged). Told again (the board has a link), or while the board tears down
    /// or cannot use it, it changes nothing.
    mutating func connectSucceeded(through adapter: AdapterPath, now: ContinuousClock.Instant) {
        switch state {
        case .connecting(let attempt):
            // Ours, or (a connect still queued) someone else's link: adopted.
            let through = attempt.adapter ?? adapter
            state = .resolving(Link(adapter: through, connectedThrough: attempt.adapter))
        case .idle, .standby, .backingOff, .absent:
            // Someone else connected it: adopt the link.
            state = .resolving(Link(adapter: adapter))
        case .resolving, .preparing, .ready, .disconnecting, .waitingForAdapter, .failed, .forgotten:
            break
        }
    }

    /// `ServicesResolved` became true: the connect succeeded; the profile's characteristics
    /// on this link are looked up next (``characteristicsFound(link:now:)``). Told again, it
    /// changes nothing.
    mutating func servicesResolved(now: ContinuousClock.Instant) -> LinkUpAction? {
        switch state {
        case .connecting(let attempt):
            // Resolved before Connected=true was told (bluetoothd may set only this).
            guard let adapter = attempt.adapter else { return nil }
            state = .preparing(Link(adapter: adapter, connectedThrough: adapter, resolvedAt: now))
        case .resolving(var current):
            current.resolvedAt = now
            state = .preparing(current)
        default:
            return nil
        }
        // The streak of failed attempts ends when the link has lasted (``settleTimerFired``).
        lastFailure = nil
        return .lookUpCharacteristics(link: link)
    }

    /// The link the board is being prepared on shows through the adapter at `adapter` (it
    /// was adopted, or moved): that is where it is from now on.
    mutating func linkFound(through adapter: AdapterPath) {
        guard case .preparing(var current) = state, current.adapter != adapter else { return }
        current.adapter = adapter
        state = .preparing(current)
    }

    /// The profile's characteristics on link `found` were looked up: the board is usable.
    /// The answer of a link that has since ended is stale.
    mutating func characteristicsFound(link found: UInt64, now: ContinuousClock.Instant) -> LinkUpAction? {
        guard found == link else { return nil }
        guard case .preparing(var current) = state else {
            // A link is prepared once, and leaving `preparing` for anything but `ready` ends it.
            impossible("the characteristics of the current link found outside preparing")
            return nil
        }
        current.lastUsed = now
        state = .ready(current)
        return .becomeReady(settle: Timer(kind: .settle(link: link), after: Self.settleTime))
    }

    /// The settle timer of link `settled` fired: once the link has lasted
    /// ``BoardStateMachine/settleTime`` since its resolve, its connect worked, and the streak
    /// of failed attempts before it ends. The timer of an ended link, or one early or told
    /// again, is stale.
    mutating func settleTimerFired(link settled: UInt64, now: ContinuousClock.Instant) -> LinkUpAction? {
        guard settled == link else { return nil }
        guard var current = currentLink else {
            // The timer starts with `ready`, and the link ends with every way out of it.
            impossible("the settle timer of the current link fired without a link")
            return nil
        }
        guard let since = current.resolvedAt, since.duration(to: now) >= Self.settleTime else { return nil }
        current.resolvedAt = nil
        state = isReady ? .ready(current) : .preparing(current)
        let failures = backoff.attempts
        backoff.reset()
        return .linkSettled(afterFailures: failures, through: current.connectedThrough)
    }

    // MARK: Work on the link

    /// A call used the board's link (it is the most recently used now).
    mutating func linkUsed(now: ContinuousClock.Instant) {
        guard case .ready(var current) = state else { return }
        current.lastUsed = now
        state = .ready(current)
    }

    /// The LED was written `on` over link `written`. Stale when that link has ended, or is
    /// not ready (a call's session is made for the current link when its waiter resumes,
    /// which may be after that link fell and the next began).
    mutating func ledWritten(_ on: Bool, link written: UInt64) {
        guard written == link, case .ready(var current) = state else { return }
        current.appliedLED = on
        state = .ready(current)
    }
}

// MARK: - Its connect failing, its link going down

extension BoardStateMachine {
    /// A connect attempt (or the resolve after it) failed or timed out. Stale when the board
    /// no longer connects (a cancelled attempt's outcome).
    mutating func connectFailed(_ errorClass: ConnectErrorClass, now: ContinuousClock.Instant) -> OutcomeAction? {
        switch state {
        case .connecting:
            return handleFailure(errorClass, now: now)
        case .resolving(let current):
            // The link is up but unusable: tear it down, then handle the failure.
            state = .disconnecting(then: .failure(errorClass), adapter: current.adapter)
            lastFailure = errorClass
            endLink()
            return .disconnect(failWaiters: errorClass == .permanent ? .failed : nil)
        case .disconnecting(let then, _):
            // Our Disconnect cancelled the connect: the disconnect is complete.
            return finishDisconnect(then, now: now)
        default:
            return nil
        }
    }

    /// `Connected` became false, or the actor's `Device1.Disconnect` call returned.
    /// `withAdapter`: the link went with its adapter (powered off, unplugged), which is no
    /// failed connect however young the link was. With no link up nor going down, it changes
    /// nothing.
    mutating func disconnected(now: ContinuousClock.Instant, withAdapter: Bool = false) -> OutcomeAction? {
        switch state {
        case .resolving(let current), .preparing(let current), .ready(let current):
            // Lost before it was resolved, or within the settle time after: the connect failed.
            // Moments after its adapter went, a link that falls (a stale one adopted) went with
            // that adapter too: the board is still moving.
            let moving = withAdapter || movedLately(at: now)
            let resolving = if case .resolving = state { true } else { false }
            let early = !moving && (resolving || current.resolvedAt.map { $0.duration(to: now) < Self.settleTime } ?? false)
            endLink()
            guard wanted else {
                state = .idle
                return .abandonConnection(failWaiters: nil)
            }
            // Link lost: reconnect once the board is seen advertising again (a board that
            // lost its link because it was switched off or left would only tie up the
            // adapter's connect queue; one that is still there advertises again at once).
            var absence = moving && !withAdapter ? Absence(since: movedAt ?? now, moving: true) : Absence(since: now)
            absence.linkLostAt = now
            guard early else {
                state = .absent(absence)
                return .abandonConnection(failWaiters: nil)
            }
            // A failed connect: its retry waits the streak's backoff (past the cap of
            // attempts, the next advertisement starts afresh).
            lastFailure = .transient
            if case .retry(let delay) = backoff.next(after: .transient) { absence.retryFloor = delay }
            let attempts = backoff.attempts
            if absence.retryFloor == nil { backoff.reset() }
            state = .absent(absence)
            return .linkLostEarly(failedAttempts: attempts, through: current.connectedThrough)
        case .disconnecting(let then, _):
            return finishDisconnect(then, now: now)
        default:
            return nil
        }
    }

    /// The link `missing` was to be prepared on is not there (BlueZ shows no link): it is
    /// lost. The answer of a link that has since ended is stale.
    mutating func linkMissing(link missing: UInt64, now: ContinuousClock.Instant) -> OutcomeAction? {
        guard missing == link else { return nil }
        switch state {
        case .preparing, .ready:
            return disconnected(now: now)
        default:
            // A link is looked for while it is prepared, and it ends with every way out.
            impossible("the current link found missing outside preparing or ready")
            return nil
        }
    }

    /// The link that fell as soon as it came up (``OutcomeAction/linkLostEarly(failedAttempts:through:)``)
    /// went with its adapter (powered off, unplugged): not a failed connect after all.
    mutating func linkLossForgiven() {
        // Only an early loss leaves a retry floor (a failed Connect backs off instead).
        guard case .absent(var absence) = state, absence.retryFloor != nil else { return }
        backoff.forgetOne()
        absence.retryFloor = nil
        state = .absent(absence)
        lastFailure = nil
    }
}

// MARK: - Its link or connect ended from outside

extension BoardStateMachine {
    /// A user or LRU eviction wants the board disconnected; it stays disconnected until the
    /// next connect request. An evicted board (`evicted`) waits its turn in standby: it gave
    /// its slot away, it is not done with.
    mutating func disconnectRequested(now: ContinuousClock.Instant, evicted: Bool = false) -> TeardownAction? {
        if evicted, case .ready(let current) = state {
            // Still wanted: it takes a slot again when one is free.
            state = .disconnecting(then: .standby, adapter: current.adapter)
            endLink()
            return .disconnect(failWaiters: nil)
        }
        wanted = false
        switch state {
        case .connecting(let attempt):
            endLink()
            guard let adapter = attempt.adapter else {
                state = .idle
                return .abandonConnection(failWaiters: .cancelled)
            }
            state = .disconnecting(then: .idle, adapter: adapter)
            return .disconnect(failWaiters: .cancelled)
        case .resolving(let current):
            state = .disconnecting(then: .idle, adapter: current.adapter)
            endLink()
            return .disconnect(failWaiters: .cancelled)
        case .preparing(let current), .ready(let current):
            state = .disconnecting(then: .idle, adapter: current.adapter)
            endLink()
            return .disconnect(failWaiters: nil)
        case .disconnecting(let then, let adapter):
            if then == .reconnect { state = .disconnecting(then: .idle, adapter: adapter) }
            return .failWaiters(.cancelled)
        case .backingOff:
            state = .idle
            return .failWaiters(.cancelled)
        case .standby:
            state = .idle
            return nil
        case .idle, .absent, .waitingForAdapter, .failed, .forgotten:
            return nil
        }
    }

    /// The board is removed from the fleet. Terminal.
    mutating func forget(now: ContinuousClock.Instant) -> TeardownAction? {
        let previous = state
        state = .forgotten
        wanted = false
        switch previous {
        case .forgotten:
            return nil
        case .connecting(let attempt) where attempt.adapter == nil:
            endLink()
            return .abandonConnection(failWaiters: .notFound)
        case .connecting, .resolving, .preparing, .ready, .disconnecting:
            endLink()
            return .disconnect(failWaiters: .notFound)
        case .idle, .standby, .backingOff, .absent, .waitingForAdapter, .failed:
            return .failWaiters(.notFound)
        }
    }

    /// The `Device1` object was removed from BlueZ (InterfacesRemoved).
    mutating func deviceVanished(now: ContinuousClock.Instant) -> TeardownAction? {
        // No adapter knows the board any more: it is gone, not about to relink.
        switch state {
        case .idle, .standby, .backingOff:
            state = .absent(Absence(since: now))
            return nil
        case .absent(var absence):
            absence.linkLostAt = nil
            state = .absent(absence)
            return nil
        case .connecting, .resolving, .preparing, .ready:
            state = .absent(Absence(since: now))
            endLink()
            return .abandonConnection(failWaiters: .absent)
        case .disconnecting(let then, _):
            state = .absent(Absence(since: now))
            if then == .reconnect { wanted = true }
            endLink()
            return .abandonConnection(failWaiters: .absent)
        case .waitingForAdapter:
            state = .waitingForAdapter(present: false)
            return nil
        case .failed, .forgotten:
            return nil
        }
    }

    /// The adapter was powered off (or went away): nothing connects until it is back.
    mutating func adapterPoweredOff(now: ContinuousClock.Instant) -> TeardownAction? {
        switch state {
        case .forgotten, .failed, .waitingForAdapter:
            return nil
        case .connecting, .resolving, .preparing, .ready, .disconnecting:
            state = .waitingForAdapter(present: true)
            endLink()
            return .abandonConnection(failWaiters: .adapterOff)
        case .idle, .standby, .backingOff:
            state = .waitingForAdapter(present: true)
            return nil
        case .absent:
            state = .waitingForAdapter(present: false)
            return nil
        }
    }
}

// MARK: - Helpers

extension BoardStateMachine {
    /// The link (or the connect) ends: work of this link is stale from now on.
    private mutating func endLink() {
        link &+= 1
    }

    private mutating func beginConnect() -> ConnectAction {
        state = .connecting(Attempt())
        return .startConnect
    }

    /// Backs off for `delay`, then tries again (``retryTimerFired(token:now:)``): the
    /// timer to start.
    private mutating func backOff(for delay: Duration) -> Timer {
        lastToken &+= 1
        state = .backingOff(token: lastToken)
        return Timer(kind: .retry(token: lastToken), after: delay)
    }

    private mutating func handleFailure(_ errorClass: ConnectErrorClass, now: ContinuousClock.Instant) -> OutcomeAction? {
        lastFailure = errorClass
        switch backoff.next(after: errorClass) {
        case .retry(let delay):
            guard wanted else {
                state = .idle
                return .failWaiters(errorClass.errorCode)
            }
            return .startTimer(backOff(for: delay))
        case .waitForAdvertisement:
            // No adapter hears it yet, moments after its adapter went: it is moving, and the
            // callers waiting for it go on waiting (within their deadline).
            if errorClass == .absent, let movedAt, movedLately(at: now) {
                state = .absent(Absence(since: movedAt, moving: true))
                return nil
            }
            state = .absent(Absence(since: now))
            return .waitForAdvertisement(failWaiters: .absent)
        case .giveUp:
            state = .failed
            return .failWaiters(.failed)
        }
    }

    private mutating func finishDisconnect(_ then: AfterDisconnect, now: ContinuousClock.Instant) -> OutcomeAction? {
        switch then {
        case .idle:
            state = .idle
            return nil
        case .standby:
            state = .standby
            return nil
        case .reconnect:
            state = .connecting(Attempt())
            return .startConnect
        case .failure(let errorClass):
            return handleFailure(errorClass, now: now)
        }
    }
}
