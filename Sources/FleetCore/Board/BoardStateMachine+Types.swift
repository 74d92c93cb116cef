import BlueZ

/// The states of ``BoardStateMachine``, the data each carries, the actions its inputs
/// return, and what the board shows of it.
extension BoardStateMachine {
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
        /// Forgotten: terminal, every further input is stale.
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

    /// A timer the board actor starts for the machine, told after ``after`` as the input of
    /// its kind (a timer that no longer matches the machine's state is stale).
    struct Timer: Sendable, Equatable {
        enum Kind: Sendable, Equatable {
            /// The retry of a backing-off board, numbered: an older one no longer matches
            /// (``BoardStateMachine/retryTimerFired(token:now:)``).
            case retry(token: UInt64)
            /// Link `link` has lasted ``BoardStateMachine/settleTime``
            /// (``BoardStateMachine/settleTimerFired(link:now:)``).
            case settle(link: UInt64)
            /// A call gave a board whose link fell moments ago ``BoardStateMachine/relinkGrace``
            /// (``BoardStateMachine/relinkGraceEnded(awaited:now:)``).
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

    // MARK: - What each input asks of the board
    //
    // Each input returns the actions it can produce and no other: nil when there is nothing
    // to do. The board performs them (``BoardCore`` records them in order, ``Board`` runs
    // them); an input that performing one gives the machine waits until it is performed.

    /// What follows an input that may start a connect (``connectRequested(reason:now:)``,
    /// ``callWaiting(now:)``, ``advertisementSeen(now:)``, ``linkAdapterWent(heardElsewhere:now:)``,
    /// ``connectionRoomAppeared(now:)``, ``adapterPoweredOn(now:)``, the retry and relink-grace
    /// timers).
    enum ConnectAction: Sendable, Equatable {
        /// Queue a connect on the adapter's ``ConnectScheduler``, call `Device1.Connect`, and
        /// report `connectAttemptStarted`, then `connectSucceeded`/`connectFailed`.
        case startConnect
        /// Start `timer` (a retry, or a call's grace for a link that fell); older timers may be
        /// left running: they no longer match.
        case startTimer(Timer)
        /// The board cannot connect now (forgotten, absent, its adapter off): fail everyone
        /// waiting for it to become ready.
        case failWaiters(FleetErrorCode)
    }

    /// What follows a step of a link coming up (``servicesResolved(now:)``,
    /// ``characteristicsFound(link:now:)``, ``settleTimerFired(link:now:)``).
    enum LinkUpAction: Sendable, Equatable {
        /// Services are resolved on link `link`: look up the profile's characteristics by UUID
        /// (paths change across links), then report ``BoardStateMachine/characteristicsFound(link:now:)``,
        /// or ``BoardStateMachine/linkMissing(link:now:)`` when BlueZ shows no link.
        case lookUpCharacteristics(link: UInt64)
        /// The board is usable: resume waiters, subscribe to its sensors' notifications,
        /// re-apply the desired LED, and start `settle` (the link's settle time).
        case becomeReady(settle: Timer)
        /// The link lasted ``BoardStateMachine/settleTime``: the connect through `through`
        /// (nil: the link was adopted) worked, and ended a streak of `afterFailures` failed
        /// attempts (0: there was none).
        case linkSettled(afterFailures: Int, through: AdapterPath?)
    }

    /// What follows the outcome of a connect or the end of a link (``connectFailed(_:now:)``,
    /// ``disconnected(now:withAdapter:)``, ``linkMissing(link:now:)``): the failure is handled,
    /// or the disconnect that was running completes.
    enum OutcomeAction: Sendable, Equatable {
        /// A disconnect completed while a connect was wanted meanwhile: start it (as
        /// ``ConnectAction/startConnect``).
        case startConnect
        /// Retry after `timer` (a ``Timer/Kind/retry(token:)``).
        case startTimer(Timer)
        /// Fail everyone waiting for the board to become ready.
        case failWaiters(FleetErrorCode)
        /// Too many failures, or no adapter hears the board: nothing to do until
        /// `advertisementSeen`; fail waiters when `failWaiters` is set.
        case waitForAdvertisement(failWaiters: FleetErrorCode?)
        /// A link up but unusable is torn down: as ``TeardownAction/disconnect(failWaiters:)``.
        case disconnect(failWaiters: FleetErrorCode?)
        /// The link is gone: as ``TeardownAction/abandonConnection(failWaiters:)``.
        case abandonConnection(failWaiters: FleetErrorCode?)
        /// The link fell as soon as it came up (before ``BoardStateMachine/settleTime``): drop
        /// it like `abandonConnection` (waiters keep waiting for the reconnect), and count a
        /// failed connect, the `failedAttempts`-th in a row, for the board and for the adapter
        /// of the connect that made it (`through`; nil for a link adopted).
        case linkLostEarly(failedAttempts: Int, through: AdapterPath?)
    }

    /// What follows an input that ends the board's link or connect from outside
    /// (``disconnectRequested(now:evicted:)``, ``forget(now:)``, ``deviceVanished(now:)``,
    /// ``adapterPoweredOff(now:)``).
    enum TeardownAction: Sendable, Equatable {
        /// Cancel any queued connect and call `Device1.Disconnect`; report `disconnected` when
        /// it returns. Fail waiters first when `failWaiters` is set.
        case disconnect(failWaiters: FleetErrorCode?)
        /// Cancel any queued or running connect and drop GATT handles without calling BlueZ
        /// (the link is gone or never came up). Fail waiters when `failWaiters` is set.
        case abandonConnection(failWaiters: FleetErrorCode?)
        /// Nothing to tear down: fail everyone waiting for the board to become ready.
        case failWaiters(FleetErrorCode)
    }

    /// Why a connect is wanted.
    enum ConnectReason: Sendable, Equatable {
        /// A user command needs the board: also retries a board that failed permanently.
        case command
        /// Auto-connect policy: never revives a failed board.
        case automatic
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

    /// Whether the board holds (or is about to hold) a controller connection slot.
    var holdsLink: Bool {
        switch state {
        case .connecting, .resolving, .preparing, .ready, .disconnecting: true
        default: false
        }
    }

    /// Whether ``forget(now:)`` was called; the actor can be discarded.
    var isForgotten: Bool { state == .forgotten }
}
