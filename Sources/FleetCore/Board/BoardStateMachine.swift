/// The connection lifecycle of one board as a plain value: events in, actions out, no I/O.
///
/// The board actor feeds it every event (connect wanted, Connected/ServicesResolved
/// changes, failures, advertisements, adapter power, timers) and performs the returned
/// ``Action``. Rules it guarantees:
/// - every retry goes through a delay ≥ ``ReconnectPolicy/minimumDelay`` (no busy loop);
/// - asking to connect a board that is connecting, resolving or ready is a no-op;
/// - a disconnect requested while connecting cancels the connect and fails its waiters
///   with ``FleetErrorCode/cancelled``; a connect requested while disconnecting runs after
///   the disconnect completes;
/// - with the adapter off nothing connects; power-on resumes boards that were wanted;
/// - an absent board waits for its next advertisement instead of retrying blindly;
/// - stale events (an outcome of a cancelled connect, an old retry timer) are ignored.
public struct BoardStateMachine: Sendable {
    /// Where the board is in its lifecycle.
    enum State: Sendable, Equatable {
        /// Present, not connected, nothing pending.
        case idle
        /// Present and wanted, but no connection slot is free: waits for a command or for
        /// room, without connecting or retrying.
        case standby
        /// A connect is queued (`inFlight == false`) or running.
        case connecting(inFlight: Bool)
        /// Connected=true, waiting for ServicesResolved.
        case resolving
        /// Services resolved: the profile's characteristics on this link (``link``) are being
        /// looked up; calls wait for them.
        case preparing
        /// Usable: the characteristics of this link are known.
        case ready
        /// Disconnect sent; `then` says what follows once it completes.
        case disconnecting(then: AfterDisconnect)
        /// Waiting for retry timer `token`.
        case backingOff(token: UInt64)
        /// Not advertising since `since`; `moving`: its link went with its adapter (powered
        /// off, unplugged), and another adapter is about to hear it.
        case absent(since: ContinuousClock.Instant, moving: Bool)
        /// Adapter off; `present` remembers whether the device object still exists.
        case waitingForAdapter(present: Bool)
        /// Gave up after a permanent error.
        case failed
        /// Forgotten: terminal, every further event is ignored.
        case forgotten
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
    public enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Queue a connect on the adapter's ``ConnectScheduler``, call `Device1.Connect`, and
        /// report `connectAttemptStarted`, then `connectSucceeded`/`connectFailed`.
        case startConnect
        /// Report `backoffTimerFired(token:)` after `delay` (older timers may be left running:
        /// their token no longer matches).
        case scheduleRetry(after: Duration, token: UInt64)
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
        /// re-apply the desired LED.
        case becomeReady
        /// Fail everyone waiting for the board to become ready.
        case failWaiters(FleetErrorCode)
        /// Nothing to do until `advertisementSeen`; fail waiters when `failWaiters` is set.
        case waitForAdvertisement(failWaiters: FleetErrorCode?)
        /// The link fell as soon as it came up (before ``BoardStateMachine/settleTime``): drop
        /// it like `abandonConnection` (waiters keep waiting for the reconnect), and count a
        /// failed connect, the `failedAttempts`-th in a row, for the board's adapter.
        case linkLostEarly(failedAttempts: Int)
        /// The link lasted ``BoardStateMachine/settleTime``: the connect worked, and ended a
        /// streak of `afterFailures` failed attempts (0: there was none).
        case linkSettled(afterFailures: Int)
    }

    /// Why a connect is wanted.
    public enum ConnectReason: Sendable, Equatable {
        /// A user command needs the board: also retries a board that failed permanently.
        case command
        /// Auto-connect policy: never revives a failed board.
        case automatic
    }

    var state: State
    /// Whether someone wants this board connected (cleared by a requested disconnect).
    public internal(set) var wanted: Bool = false
    /// The error class of the last failed connect, if any since the last success.
    public internal(set) var lastFailure: ConnectErrorClass?
    /// When the running connect attempt started.
    public internal(set) var attemptStartedAt: ContinuousClock.Instant?
    var backoff: ReconnectBackoff
    var nextToken: UInt64 = 0
    /// The current link's number, bumped whenever a link (or a connect) ends: work that
    /// belongs to an older link can tell it is stale.
    public internal(set) var link: UInt64 = 0
    /// Work running on the board (a call's operation, the LED put back): a busy board's
    /// link is never given away.
    public internal(set) var work = 0
    /// How long a board whose adapter went counts as moving, not gone.
    public static let moveGrace: Duration = .seconds(10)
    /// How long after its link fell a board that waits for its advertisement counts as just
    /// disconnected, not absent: a call waits that long for it. Its adapter's loss (the board
    /// then moves) may be told moments after the link's, and a board that is still there
    /// advertises again at once; one switched off is told absent after it.
    public static let relinkGrace: Duration = .milliseconds(500)
    /// How long a link must last, from its resolve, for its connect to count as one that
    /// worked. A link lost sooner came up and fell (a controller's `0x3e` "Connection Failed
    /// to be Established", a MIC failure, a supervision timeout at once): a failed connect,
    /// counted in the board's streak and against its adapter, not a board gone.
    public static let settleTime: Duration = .seconds(3)
    /// When the current link was resolved, until it lasted ``settleTime``
    /// (``linkSettled(link:now:)``) or ended.
    public internal(set) var resolvedAt: ContinuousClock.Instant?
    /// After a link lost as soon as it came up: how long after the loss the next connect
    /// waits, once the board advertises again (the streak's backoff).
    var retryFloor: Duration?
    /// When the board's link last went with its adapter: for ``moveGrace`` after it, a
    /// connect that finds no adapter hearing the board yet leaves it moving (a call waits for
    /// it), not absent.
    var movedAt: ContinuousClock.Instant?
    /// When the board's last link fell (it then waited for its advertisement): for
    /// ``relinkGrace`` after it a call waits rather than be answered absent.
    var linkLostAt: ContinuousClock.Instant?

    /// A board found by discovery (present) or loaded from the registry (not yet seen:
    /// `present == false`, it starts absent).
    public init(
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
            state = present ? .idle : .absent(since: now, moving: false)
        }
    }

    /// The phase shown to the outside world.
    public var phase: BoardPhase {
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
    public var isReady: Bool { state == .ready }

    /// Whether work runs on the board.
    public var isBusy: Bool { work > 0 }

    /// Whether the board lost its link with its adapter lately and is about to be heard
    /// through another (``linkAdapterWent(heardElsewhere:now:)``): a call waits for it.
    public func isMoving(at now: ContinuousClock.Instant) -> Bool {
        guard case .absent(let since, true) = state else { return false }
        return since.duration(to: now) < Self.moveGrace
    }

    /// How much of ``relinkGrace`` is left for a board whose link fell moments ago and that
    /// waits for its advertisement; nil for any other board.
    public func relinkGraceLeft(at now: ContinuousClock.Instant) -> Duration? {
        guard case .absent(_, false) = state, let linkLostAt else { return nil }
        let left = Self.relinkGrace - linkLostAt.duration(to: now)
        return left > .zero ? left : nil
    }

    /// Whether the board holds (or is about to hold) a controller connection slot.
    public var holdsLink: Bool {
        switch state {
        case .connecting, .resolving, .preparing, .ready, .disconnecting: true
        default: false
        }
    }

    /// Whether ``forget()`` was called; the actor can be discarded.
    public var isForgotten: Bool { state == .forgotten }

    /// Consecutive failed attempts since the last success.
    public var failedAttempts: Int { backoff.attempts }
}
