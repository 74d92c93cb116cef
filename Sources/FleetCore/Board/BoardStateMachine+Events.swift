import BlueZ

extension BoardStateMachine {
    /// A command or the auto-connect policy needs the board connected.
    /// When the returned action is `.none` and ``isReady`` is true, proceed at once;
    /// otherwise wait for `becomeReady` or `failWaiters`.
    mutating func connectRequested(
        reason: ConnectReason = .command, now: ContinuousClock.Instant
    ) -> Action {
        switch state {
        case .forgotten:
            return .failWaiters(.notFound)
        case .failed:
            guard reason == .command else { return .none }
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
            return .none
        case .backingOff where reason == .command:
            // Someone waits: try now (a command may free a slot) rather than at the timer.
            wanted = true
            return beginConnect()
        case .connecting, .resolving, .preparing, .ready, .backingOff:
            wanted = true
            return .none
        case .disconnecting(let then, let adapter):
            wanted = true
            if then == .idle || (then == .standby && reason == .command) { state = .disconnecting(then: .reconnect, adapter: adapter) }
            return .none
        case .absent where isMoving(at: now):
            // Moving to another adapter that will hear it: the caller waits (its deadline
            // bounds the wait).
            wanted = true
            return .none
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

    /// The actor got the connect permit of the adapter at `adapter` and a slot there, and is
    /// calling `Device1.Connect`.
    mutating func connectAttemptStarted(through adapter: AdapterPath, now: ContinuousClock.Instant) -> Action {
        guard case .connecting = state else { return .none }
        state = .connecting(Attempt(adapter: adapter, startedAt: now))
        lastLinkAdapter = adapter
        return .none
    }

    /// `Connected` became true through the adapter at `adapter` (reply to Connect, or
    /// PropertiesChanged).
    mutating func connectSucceeded(through adapter: AdapterPath, now: ContinuousClock.Instant) -> Action {
        switch state {
        case .connecting(let attempt):
            // Ours, or (a connect still queued) someone else's link: adopted.
            let through = attempt.adapter ?? adapter
            state = .resolving(Link(adapter: through, connectedThrough: attempt.adapter))
            lastLinkAdapter = through
            return .none
        case .idle, .standby, .backingOff, .absent:
            // Someone else connected it: adopt the link.
            state = .resolving(Link(adapter: adapter))
            lastLinkAdapter = adapter
            return .none
        case .resolving, .preparing, .ready, .disconnecting, .waitingForAdapter, .failed, .forgotten:
            return .none
        }
    }

    /// `ServicesResolved` became true: the connect succeeded; the profile's characteristics
    /// on this link are looked up next (``characteristicsFound(link:now:)``).
    mutating func servicesResolved(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .connecting(let attempt):
            // Resolved before Connected=true was told (bluetoothd may set only this).
            guard let adapter = attempt.adapter else { return .none }
            state = .preparing(Link(adapter: adapter, connectedThrough: adapter, resolvedAt: now))
        case .resolving(var current):
            current.resolvedAt = now
            state = .preparing(current)
        default:
            return .none
        }
        // The streak of failed attempts ends when the link has lasted (``linkSettled``).
        lastFailure = nil
        return .lookUpCharacteristics(link: link)
    }

    /// The link the board is being prepared on shows through the adapter at `adapter` (it
    /// was adopted, or moved): that is where it is from now on.
    mutating func linkFound(through adapter: AdapterPath) -> Action {
        guard case .preparing(var current) = state, current.adapter != adapter else { return .none }
        current.adapter = adapter
        state = .preparing(current)
        lastLinkAdapter = adapter
        return .none
    }

    /// The profile's characteristics on link `link` were looked up: the board is usable.
    /// The answer of a link that has since ended is ignored.
    mutating func characteristicsFound(link found: UInt64, now: ContinuousClock.Instant) -> Action {
        guard case .preparing(var current) = state, found == link else { return .none }
        current.lastUsed = now
        state = .ready(current)
        return .becomeReady(settle: Timer(kind: .settle(link: link), after: Self.settleTime))
    }

    /// The link `link` has lasted ``BoardStateMachine/settleTime`` since its resolve: its
    /// connect worked, and the streak of failed attempts before it ends.
    mutating func linkSettled(link settled: UInt64, now: ContinuousClock.Instant) -> Action {
        guard settled == link, var current = currentLink, let since = current.resolvedAt,
            since.duration(to: now) >= Self.settleTime
        else { return .none }
        current.resolvedAt = nil
        state = isReady ? .ready(current) : .preparing(current)
        let failures = backoff.attempts
        backoff.reset()
        return .linkSettled(afterFailures: failures, through: current.connectedThrough)
    }

    /// The link that fell as soon as it came up (``Action/linkLostEarly(failedAttempts:)``)
    /// went with its adapter (powered off, unplugged): not a failed connect after all.
    mutating func linkLossForgiven() -> Action {
        // Only an early loss leaves a retry floor (a failed Connect backs off instead).
        guard case .absent(var absence) = state, absence.retryFloor != nil else { return .none }
        backoff.forgetOne()
        absence.retryFloor = nil
        state = .absent(absence)
        lastFailure = nil
        return .none
    }

    /// The link `link` was to be prepared on is not there (BlueZ shows no link): it is lost.
    mutating func linkMissing(link missing: UInt64, now: ContinuousClock.Instant) -> Action {
        switch state {
        case .preparing, .ready: missing == link ? disconnected(now: now) : .none
        default: .none
        }
    }

    /// A connect attempt (or the resolve after it) failed or timed out.
    mutating func connectFailed(
        _ errorClass: ConnectErrorClass, now: ContinuousClock.Instant
    ) -> Action {
        switch state {
        case .connecting:
            return handleFailure(errorClass, now: now)
        case .resolving(let current):
            // The link is up but unusable: tear it down, then handle the failure.
            state = .disconnecting(then: .failure(errorClass), adapter: current.adapter)
            lastFailure = errorClass
            return endLink(.disconnect(failWaiters: errorClass == .permanent ? .failed : nil))
        case .disconnecting(let then, _):
            // Our Disconnect cancelled the connect: the disconnect is complete.
            return finishDisconnect(then, now: now)
        default:
            return .none  // stale outcome of a cancelled attempt
        }
    }

    /// The automatic connect found every connection slot of its adapter taken (and nobody
    /// waits for the board): it waits its turn in ``BoardPhase/standby``, without a
    /// connect call, a retry timer or a failure. More boards than slots is normal.
    mutating func slotUnavailable(now: ContinuousClock.Instant) -> Action {
        guard case .connecting = state else { return .none }
        state = .standby
        return .none
    }

    /// `Connected` became false, or the actor's `Device1.Disconnect` call returned.
    /// `withAdapter`: the link went with its adapter (powered off, unplugged), which is no
    /// failed connect however young the link was.
    mutating func disconnected(now: ContinuousClock.Instant, withAdapter: Bool = false) -> Action {
        switch state {
        case .resolving(let current), .preparing(let current), .ready(let current):
            // Lost before it was resolved, or within the settle time after: the connect failed.
            // Moments after its adapter went, a link that falls (a stale one adopted) went with
            // that adapter too: the board is still moving.
            let moving = withAdapter || movedLately(at: now)
            let resolving = if case .resolving = state { true } else { false }
            let early = !moving && (resolving || current.resolvedAt.map { $0.duration(to: now) < Self.settleTime } ?? false)
            guard wanted else {
                state = .idle
                return endLink(.abandonConnection(failWaiters: nil))
            }
            // Link lost: reconnect once the board is seen advertising again (a board that
            // lost its link because it was switched off or left would only tie up the
            // adapter's connect queue; one that is still there advertises again at once).
            var absence =
                moving && !withAdapter
                ? Absence(since: movedAt ?? now, moving: true) : Absence(since: now)
            absence.linkLostAt = now
            guard early else {
                state = .absent(absence)
                return endLink(.abandonConnection(failWaiters: nil))
            }
            // A failed connect: its retry waits the streak's backoff (past the cap of
            // attempts, the next advertisement starts afresh).
            lastFailure = .transient
            if case .retry(let delay) = backoff.next(after: .transient) { absence.retryFloor = delay }
            let attempts = backoff.attempts
            if absence.retryFloor == nil { backoff.reset() }
            state = .absent(absence)
            return endLink(.linkLostEarly(failedAttempts: attempts, through: current.connectedThrough))
        case .disconnecting(let then, _):
            return finishDisconnect(then, now: now)
        default:
            return .none
        }
    }

    /// The board advertised (device added, or RSSI/ManufacturerData changed).
    mutating func advertisementSeen(now: ContinuousClock.Instant) -> Action {
        guard case .absent(let absence) = state else { return .none }
        let since = absence.since
        // Back after a link that fell at once: the streak goes on, with its backoff.
        let floor = absence.retryFloor ?? backoff.policy.minimumDelay
        if absence.retryFloor == nil { backoff.reset() }
        guard wanted else {
            state = .idle
            backoff.reset()
            return .none
        }
        let elapsed = since.duration(to: now)
        if elapsed >= floor { return beginConnect() }
        return backOff(for: floor - elapsed)
    }

    /// The `Device1` object was removed from BlueZ (InterfacesRemoved).
    mutating func deviceVanished(now: ContinuousClock.Instant) -> Action {
        // No adapter knows the board any more: it is gone, not about to relink.
        switch state {
        case .idle, .standby, .backingOff:
            state = .absent(Absence(since: now))
            return .none
        case .absent(var absence):
            absence.linkLostAt = nil
            state = .absent(absence)
            return .none
        case .connecting, .resolving, .preparing, .ready:
            state = .absent(Absence(since: now))
            return endLink(.abandonConnection(failWaiters: .absent))
        case .disconnecting(let then, _):
            state = .absent(Absence(since: now))
            if then == .reconnect { wanted = true }
            return endLink(.abandonConnection(failWaiters: .absent))
        case .waitingForAdapter:
            state = .waitingForAdapter(present: false)
            return .none
        case .failed, .forgotten:
            return .none
        }
    }

    /// The adapter was powered off (or went away): nothing connects until it is back.
    mutating func adapterPoweredOff(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .forgotten, .failed, .waitingForAdapter:
            return .none
        case .connecting, .resolving, .preparing, .ready, .disconnecting:
            state = .waitingForAdapter(present: true)
            return endLink(.abandonConnection(failWaiters: .adapterOff))
        case .idle, .standby, .backingOff:
            state = .waitingForAdapter(present: true)
            return .none
        case .absent:
            state = .waitingForAdapter(present: false)
            return .none
        }
    }

    /// The adapter was powered on: wanted boards that are present connect again.
    mutating func adapterPoweredOn(now: ContinuousClock.Instant) -> Action {
        guard case .waitingForAdapter(let present) = state else { return .none }
        backoff.reset()
        guard present else {
            // A board moving off its adapter when it was powered off (reset, as a stuck one
            // is) is still about to be heard: a call waits for it as before.
            if let movedAt, movedLately(at: now) {
                state = .absent(Absence(since: movedAt, moving: true))
            } else {
                state = .absent(Absence(since: now))
            }
            return .none
        }
        guard wanted else {
            state = .idle
            return .none
        }
        return beginConnect()
    }

    /// The adapter of the board's last link went (powered off, unplugged; its link, if any,
    /// is reported lost first): the board did not go, it moves to another adapter. One that
    /// already knows it (`heardElsewhere`) connects it; until one hears it, a call waits for
    /// it (``isMoving(at:)``) rather than be answered `absent`.
    mutating func linkAdapterWent(heardElsewhere: Bool, now: ContinuousClock.Instant) -> Action {
        movedAt = now
        guard case .absent = state else { return .none }
        state = .absent(Absence(since: now, moving: true))
        return heardElsewhere ? advertisementSeen(now: now) : .none
    }

    /// An adapter came (plugged in, powered on): a board waiting to retry, or waiting for a
    /// slot, tries now.
    mutating func connectionRoomAppeared(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .backingOff where wanted, .standby where wanted: return beginConnect()
        default: return .none
        }
    }

    /// A timer the machine asked for fired; `awaited`: a call waits for the board.
    mutating func timerFired(_ timer: Timer, awaited: Bool, now: ContinuousClock.Instant) -> Action {
        switch timer.kind {
        case .retry(let token): backoffTimerFired(token: token, now: now)
        case .settle(let link): linkSettled(link: link, now: now)
        case .relinkGrace: relinkGraceEnded(awaited: awaited, now: now)
        }
    }

    /// A call waits for the board to become ready (it is not). A board moving to another
    /// adapter is connected by its advertisement there; one whose link fell moments ago is
    /// waited for (it advertises again, or its adapter's loss is told and it moves) before
    /// it is called absent; any other is connected for the call now.
    mutating func callWaiting(now: ContinuousClock.Instant) -> Action {
        guard !isReady, !isMoving(at: now) else { return .none }
        if let left = relinkGraceLeft(at: now) { return .startTimer(Timer(kind: .relinkGrace, after: left)) }
        return connectRequested(reason: .command, now: now)
    }

    /// The grace a call gave a board whose link fell has passed: a board still not ready,
    /// and not moving, is connected for the calls still waiting, or they are told why not.
    mutating func relinkGraceEnded(awaited: Bool, now: ContinuousClock.Instant) -> Action {
        guard awaited, !isReady, !isMoving(at: now) else { return .none }
        return connectRequested(reason: .command, now: now)
    }

    /// The retry timer scheduled with `token` fired.
    mutating func backoffTimerFired(token: UInt64, now: ContinuousClock.Instant) -> Action {
        guard case .backingOff(let current) = state, current == token else { return .none }
        guard wanted else {
            state = .idle
            return .none
        }
        return beginConnect()
    }

    /// A user or LRU eviction wants the board disconnected; it stays disconnected until the
    /// next connect request. An evicted board (`evicted`) waits its turn in standby: it gave
    /// its slot away, it is not done with.
    mutating func disconnectRequested(now: ContinuousClock.Instant, evicted: Bool = false) -> Action {
        if evicted, case .ready(let current) = state {
            // Still wanted: it takes a slot again when one is free.
            state = .disconnecting(then: .standby, adapter: current.adapter)
            return endLink(.disconnect(failWaiters: nil))
        }
        wanted = false
        switch state {
        case .connecting(let attempt):
            guard let adapter = attempt.adapter else {
                state = .idle
                return endLink(.abandonConnection(failWaiters: .cancelled))
            }
            state = .disconnecting(then: .idle, adapter: adapter)
            return endLink(.disconnect(failWaiters: .cancelled))
        case .resolving(let current):
            state = .disconnecting(then: .idle, adapter: current.adapter)
            return endLink(.disconnect(failWaiters: .cancelled))
        case .preparing(let current), .ready(let current):
            state = .disconnecting(then: .idle, adapter: current.adapter)
            return endLink(.disconnect(failWaiters: nil))
        case .disconnecting(let then, let adapter):
            if then == .reconnect { state = .disconnecting(then: .idle, adapter: adapter) }
            return .failWaiters(.cancelled)
        case .backingOff:
            state = .idle
            return .failWaiters(.cancelled)
        case .standby:
            state = .idle
            return .none
        case .idle, .absent, .waitingForAdapter, .failed, .forgotten:
            return .none
        }
    }

    /// The board is removed from the fleet. Terminal.
    mutating func forget(now: ContinuousClock.Instant) -> Action {
        let previous = state
        state = .forgotten
        wanted = false
        switch previous {
        case .forgotten:
            return .none
        case .connecting(let attempt) where attempt.adapter == nil:
            return endLink(.abandonConnection(failWaiters: .notFound))
        case .connecting, .resolving, .preparing, .ready, .disconnecting:
            return endLink(.disconnect(failWaiters: .notFound))
        case .idle, .standby, .backingOff, .absent, .waitingForAdapter, .failed:
            return .failWaiters(.notFound)
        }
    }

    // MARK: - Work on the link

    /// A call used the board's link (it is the most recently used now).
    mutating func linkUsed(now: ContinuousClock.Instant) -> Action {
        guard case .ready(var current) = state else { return .none }
        current.lastUsed = now
        state = .ready(current)
        return .none
    }

    /// The LED was written `on` over link `written` (ignored when that link has ended).
    mutating func ledWritten(_ on: Bool, link written: UInt64) -> Action {
        guard written == link, case .ready(var current) = state else { return .none }
        current.appliedLED = on
        state = .ready(current)
        return .none
    }

    /// A call's operation, or the LED put back, starts on the board: its link is not given away.
    mutating func workStarted() -> Action {
        work += 1
        return .none
    }

    /// That work ended (once none is left, ``isBusy`` is false: its link may be given away).
    mutating func workEnded() -> Action {
        work = max(0, work - 1)
        return .none
    }

    // MARK: - Helpers

    /// The link (or the connect) ends with `action`: work of this link is stale from now on.
    private mutating func endLink(_ action: Action) -> Action {
        link &+= 1
        return action
    }

    private mutating func beginConnect() -> Action {
        state = .connecting(Attempt())
        return .startConnect
    }

    /// Backs off for `delay`, then tries again (``backoffTimerFired(token:now:)``).
    private mutating func backOff(for delay: Duration) -> Action {
        nextToken &+= 1
        state = .backingOff(token: nextToken)
        return .startTimer(Timer(kind: .retry(token: nextToken), after: delay))
    }

    private mutating func handleFailure(_ errorClass: ConnectErrorClass, now: ContinuousClock.Instant) -> Action {
        lastFailure = errorClass
        switch backoff.next(after: errorClass) {
        case .retry(let delay):
            guard wanted else {
                state = .idle
                return .failWaiters(errorClass.errorCode)
            }
            return backOff(for: delay)
        case .waitForAdvertisement:
            // No adapter hears it yet, moments after its adapter went: it is moving, and the
            // callers waiting for it go on waiting (within their deadline).
            if errorClass == .absent, let movedAt, movedLately(at: now) {
                state = .absent(Absence(since: movedAt, moving: true))
                return .none
            }
            state = .absent(Absence(since: now))
            return .waitForAdvertisement(failWaiters: .absent)
        case .giveUp:
            state = .failed
            return .failWaiters(.failed)
        }
    }

    private mutating func finishDisconnect(_ then: AfterDisconnect, now: ContinuousClock.Instant) -> Action {
        switch then {
        case .idle:
            state = .idle
            return .none
        case .standby:
            state = .standby
            return .none
        case .reconnect:
            return beginConnect()
        case .failure(let errorClass):
            return handleFailure(errorClass, now: now)
        }
    }
}
