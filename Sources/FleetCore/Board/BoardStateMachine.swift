import BlueZ

/// The connection lifecycle of one board as a plain value: events in, actions out, no I/O.
///
/// The board actor feeds it every event (connect wanted, Connected/ServicesResolved
/// changes, failures, advertisements, adapter power, timers) and performs the returned
/// ``Action``; every timer (a retry, a link's settle time, a call's grace for a link that
/// fell) is an action it returns and an event it is told (``timerFired(_:awaited:now:)``).
/// The board's link is recorded here alone (``linkAdapter``, ``currentLink``). Rules it
/// guarantees:
/// - every retry goes through a delay ≥ ``ReconnectPolicy/minimumDelay`` (no busy loop);
/// - asking to connect a board that is connecting, resolving or ready is a no-op;
/// - a disconnect requested while connecting cancels the connect and fails its waiters
///   with ``FleetErrorCode/cancelled``; a connect requested while disconnecting runs after
///   the disconnect completes;
/// - with the adapter off nothing connects; power-on resumes boards that were wanted;
/// - an absent board waits for its next advertisement instead of retrying blindly;
/// - stale events (an outcome of a cancelled connect, an old retry timer) are ignored.
public struct BoardStateMachine: Sendable {
    /// Where the board is in its lifecycle. Each case carries what is true of the board
    /// there, and only there: a connect's adapter and start, a link's adapter and resolve,
    /// an absence's start and retry floor.
    enum State: Sendable, Equatable {
        /// Present, not connected, nothing pending.
        case idle
        /// Present and wanted, but no connection slot is free: waits for a command or for
        /// room, without connecting or retrying.
        case standby
        /// A connect is queued (no adapter yet) or running through its adapter.
        case connecting(Attempt)
        /// Connected=true, waiting for ServicesResolved.
        case resolving(Link)
        /// Services resolved: the profile's characteristics on this link (``link``) are being
        /// looked up; calls wait for them.
        case preparing(Link)
        /// Usable: the characteristics of this link are known.
        case ready(Link)
        /// Disconnect sent (the link through `adapter`, if any, is going down); `then` says
        /// what follows once it completes.
        case disconnecting(then: AfterDisconnect, adapter: AdapterPath?)
        /// Waiting for retry timer `token`.
        case backingOff(token: UInt64)
        /// Not advertising.
        case absent(Absence)
        /// Adapter off; `present` remembers whether the device object still exists.
        case waitingForAdapter(present: Bool)
        /// Gave up after a permanent error.
        case failed
        /// Forgotten: terminal, every further event is ignored.
        case forgotten
    }

    /// A connect wanted: queued until it has an adapter, then running through it.
    struct Attempt: Sendable, Equatable {
        /// The adapter (path) the connect goes through, once it runs.
        var adapter: AdapterPath?
        /// When the running attempt started.
        var startedAt: ContinuousClock.Instant?
    }

    /// The board's link: the one place it is recorded.
    struct Link: Sendable, Equatable {
        /// The adapter (path) the link goes through.
        var adapter: AdapterPath
        /// The adapter of this daemon's connect that made it (nil for a link adopted): its
        /// health learns whether the link lasted or fell at once.
        var connectedThrough: AdapterPath?
        /// When the link was resolved, until it lasted ``BoardStateMachine/settleTime``.
        var resolvedAt: ContinuousClock.Instant?
        /// When a call last used it (for the least recently used link to give away).
        var lastUsed: ContinuousClock.Instant?
        /// What the board's LED was last written to on this link (nil: not yet; a board that
        /// lost its link may have rebooted, LED off, until it is written again).
        var appliedLED: Bool?
    }

    /// A board not advertising.
    struct Absence: Sendable, Equatable {
        /// Since when (for a moving board: since its adapter went).
        var since: ContinuousClock.Instant
        /// Its link went with its adapter (powered off, unplugged), and another adapter is
        /// about to hear it.
        var moving = false
        /// After a link lost as soon as it came up: how long after the loss the next connect
        /// waits, once the board advertises again (the streak's backoff).
        var retryFloor: Duration?
        /// When its link fell (it then waits for its advertisement): for ``relinkGrace`` after
        /// it a call waits rather than be answered absent.
        var linkLostAt: ContinuousClock.Instant?
    }

    /// A timer the board actor starts for the machine; it reports ``timerFired(_:awaited:now:)``
    /// after ``after`` (a timer that no longer matches the machine's state is ignored).
    struct Timer: Sendable, Equatable {
        enum Kind: Sendable, Equatable {
            /// The retry of a backing-off board, numbered: an older one no longer matches.
            case retry(token: UInt64)
            /// Link `link` has lasted ``BoardStateMachine/settleTime``.
            case settle(link: UInt64)
            /// A call gave a board whose link fell moments ago ``BoardStateMachine/relinkGrace``.
            case relinkGrace
        }
        var kind: Kind
        var after: Duration
    }

    /// What follows a completed disconnect.
    enum AfterDisconnect: Sendable, Equatable {
        /// Nothing: the board is idle.
        case idle
        /// The board gave its slot to another (eviction): it waits its turn in standby.
        case standby
        /// A connect was requested meanwhile: start it.
        case reconnect
        /// The link was torn down after a failed resolve: handle that failure.
        case failure(ConnectErrorClass)
    }

    /// What the board actor must do after an event.
    enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Queue a connect on the adapter's ``ConnectScheduler``, call `Device1.Connect`, and
        /// report `connectAttemptStarted`, then `connectSucceeded`/`connectFailed`.
        case startConnect
        /// Start `timer` (older timers may be left running: they no longer match).
        case startTimer(Timer)
        /// Cancel any queued connect and call `Device1.Disconnect`; report `disconnected` when
        /// it returns. Fail waiters first when `failWaiters` is set.
        case disconnect(failWaiters: FleetErrorCode?)
        /// Cancel any queued or running connect and drop GATT handles without calling BlueZ
        /// (the link is gone or never came up). Fail waiters when `failWaiters` is set.
        case abandonConnection(failWaiters: FleetErrorCode?)
        /// Services are resolved on link `link`: look up the profile's characteristics by UUID
        /// (paths change across links), then report ``BoardStateMachine/characteristicsFound(link:now:)``,
        /// or ``BoardStateMachine/linkMissing(link:now:)`` when BlueZ shows no link.
        case lookUpCharacteristics(link: UInt64)
        /// The board is usable: resume waiters, subscribe to its sensors' notifications,
        /// re-apply the desired LED, and start `settle` (the link's settle time).
        case becomeReady(settle: Timer)
        /// Fail everyone waiting for the board to become ready.
        case failWaiters(FleetErrorCode)
        /// Nothing to do until `advertisementSeen`; fail waiters when `failWaiters` is set.
        case waitForAdvertisement(failWaiters: FleetErrorCode?)
        /// The link fell as soon as it came up (before ``BoardStateMachine/settleTime``): drop
        /// it like `abandonConnection` (waiters keep waiting for the reconnect), and count a
        /// failed connect, the `failedAttempts`-th in a row, for the board and for the adapter
        /// of the connect that made it (`through`; nil for a link adopted).
        case linkLostEarly(failedAttempts: Int, through: AdapterPath?)
        /// The link lasted ``BoardStateMachine/settleTime``: the connect through `through`
        /// (nil: the link was adopted) worked, and ended a streak of `afterFailures` failed
        /// attempts (0: there was none).
        case linkSettled(afterFailures: Int, through: AdapterPath?)
    }

    /// Why a connect is wanted.
    enum ConnectReason: Sendable, Equatable {
        /// A user command needs the board: also retries a board that failed permanently.
        case command
        /// Auto-connect policy: never revives a failed board.
        case automatic
    }

    var state: State
    /// Whether someone wants this board connected (cleared by a requested disconnect).
    var wanted: Bool = false
    /// The error class of the last failed connect, if any since the last success.
    var lastFailure: ConnectErrorClass?
    var backoff: ReconnectBackoff
    var nextToken: UInt64 = 0
    /// The current link's number, bumped whenever a link (or a connect) ends: work that
    /// belongs to an older link can tell it is stale.
    var link: UInt64 = 0
    /// Work running on the board (a call's operation, the LED put back): a busy board's
    /// link is never given away.
    var work = 0
    /// The adapter of the board's last link, or last connect (kept after the link).
    var lastLinkAdapter: AdapterPath?
    /// When the board's last link went with its adapter: for ``moveGrace`` after it, a
    /// connect that finds no adapter hearing the board yet leaves it moving (a call waits for
    /// it), not absent, whatever state it went through meanwhile.
    var movedAt: ContinuousClock.Instant?
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

    /// The phase shown to the outside world.
    var phase: BoardPhase {
        switch state {
        case .idle: .discovered
        case .standby: .standby
        case .connecting: .connecting
        case .resolving, .preparing: .resolving
        case .ready: .ready
        case .disconnecting: .disconnecting
        case .backingOff: .backingOff
        case .absent, .forgotten: .absent
        case .waitingForAdapter: .waitingForAdapter
        case .failed: .failed
        }
    }

    /// Whether commands can run now.
    var isReady: Bool {
        if case .ready = state { return true }
        return false
    }

    /// Whether work runs on the board.
    var isBusy: Bool { work > 0 }

    /// The board's link (resolving, preparing or ready), if it has one.
    var currentLink: Link? {
        switch state {
        case .resolving(let link), .preparing(let link), .ready(let link): link
        default: nil
        }
    }

    /// The adapter (path) of the board's link, of its running connect, or of the link going
    /// down: the adapter where it holds (or takes) a connection slot.
    var linkAdapter: AdapterPath? {
        switch state {
        case .connecting(let attempt): attempt.adapter
        case .resolving(let link), .preparing(let link), .ready(let link): link.adapter
        case .disconnecting(_, let adapter): adapter
        default: nil
        }
    }

    /// When the running connect attempt started.
    var attemptStartedAt: ContinuousClock.Instant? {
        guard case .connecting(let attempt) = state else { return nil }
        return attempt.startedAt
    }

    /// Whether the board lost its link with its adapter lately and is about to be heard
    /// through another (``linkAdapterWent(heardElsewhere:now:)``): a call waits for it.
    func isMoving(at now: ContinuousClock.Instant) -> Bool {
        guard case .absent(let absence) = state, absence.moving else { return false }
        return absence.since.duration(to: now) < Self.moveGrace
    }

    /// How much of ``relinkGrace`` is left for a board whose link fell moments ago and that
    /// waits for its advertisement; nil for any other board.
    func relinkGraceLeft(at now: ContinuousClock.Instant) -> Duration? {
        guard case .absent(let absence) = state, !absence.moving, let lostAt = absence.linkLostAt else { return nil }
        let left = Self.relinkGrace - lostAt.duration(to: now)
        return left > .zero ? left : nil
    }

    /// Whether the board's link went with its adapter within ``moveGrace`` before `now`.
    func movedLately(at now: ContinuousClock.Instant) -> Bool {
        movedAt.map { $0.duration(to: now) < Self.moveGrace } ?? false
    }

    /// Whether the board holds (or is about to hold) a controller connection slot.
    var holdsLink: Bool {
        switch state {
        case .connecting, .resolving, .preparing, .ready, .disconnecting: true
        default: false
        }
    }

    /// Whether ``forget()`` was called; the actor can be discarded.
    var isForgotten: Bool { state == .forgotten }

    /// Consecutive failed attempts since the last success.
    var failedAttempts: Int { backoff.attempts }
}
