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
        /// Usable.
        case ready
        /// Disconnect sent; `then` says what follows once it completes.
        case disconnecting(then: AfterDisconnect)
        /// Waiting for retry timer `token`.
        case backingOff(token: UInt64)
        /// Not advertising since `since`.
        case absent(since: ContinuousClock.Instant)
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
        /// The board is usable: look up characteristics by UUID, subscribe to temperature
        /// notifications, re-apply the desired LED, then resume waiters.
        case becomeReady
        /// Fail everyone waiting for the board to become ready.
        case failWaiters(FleetErrorCode)
        /// Nothing to do until `advertisementSeen`; fail waiters when `failWaiters` is set.
        case waitForAdvertisement(failWaiters: FleetErrorCode?)
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
            state = present ? .idle : .absent(since: now)
        }
    }

    /// The phase shown to the outside world.
    public var phase: BoardPhase {
        switch state {
        case .idle: .discovered
        case .standby: .standby
        case .connecting: .connecting
        case .resolving: .resolving
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

    /// Whether the board holds (or is about to hold) a controller connection slot.
    public var holdsLink: Bool {
        switch state {
        case .connecting, .resolving, .ready, .disconnecting: true
        default: false
        }
    }

    /// Whether ``forget()`` was called; the actor can be discarded.
    public var isForgotten: Bool { state == .forgotten }

    /// Consecutive failed attempts since the last success.
    public var failedAttempts: Int { backoff.attempts }
}
