extension BoardStateMachine {
    /// A command or the auto-connect policy needs the board connected.
    /// When the returned action is `.none` and ``isReady`` is true, proceed at once;
    /// otherwise wait for `becomeReady` or `failWaiters`.
    public mutating func connectRequested(
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
        case .disconnecting(let then):
            wanted = true
            if then == .idle || (then == .standby && reason == .command) { state = .disconnecting(then: .reconnect) }
            return .none
        case .absent(let since, true) where since.duration(to: now) < Self.moveGrace:
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

    /// The actor got the adapter's connect permit and is calling `Device1.Connect`.
    public mutating func connectAttemptStarted(now: ContinuousClock.Instant) -> Action {
        guard case .connecting = state else { return .none }
        state = .connecting(inFlight: true)
        attemptStartedAt = now
        return .none
    }

    /// `Connected` became true (reply to Connect, or PropertiesChanged).
    public mutating func connectSucceeded(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .connecting, .idle, .standby, .backingOff, .absent:
            // From idle/standby/backingOff/absent: someone else connected it; adopt the link.
            state = .resolving
            return .none
        case .resolving, .preparing, .ready, .disconnecting, .waitingForAdapter, .failed, .forgotten:
            return .none
        }
    }

    /// `ServicesResolved` became true: the connect succeeded; the profile's characteristics
    /// on this link are looked up next (``characteristicsFound(link:now:)``).
    public mutating func servicesResolved(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .connecting, .resolving:
            state = .preparing
            // The streak of failed attempts ends when the link has lasted (``linkSettled``).
            resolvedAt = now
            lastFailure = nil
            attemptStartedAt = nil
            return .lookUpCharacteristics(link: link)
        default:
            return .none
        }
    }

    /// The profile's characteristics on link `link` were looked up: the board is usable.
    /// The answer of a link that has since ended is ignored.
    public mutating func characteristicsFound(link found: UInt64, now: ContinuousClock.Instant) -> Action {
        guard state == .preparing, found == link else { return .none }
        state = .ready
        return .becomeReady
    }

    /// The link `link` has lasted ``BoardStateMachine/settleTime`` since its resolve: its
    /// connect worked, and the streak of failed attempts before it ends.
    public mutating func linkSettled(link settled: UInt64, now: ContinuousClock.Instant) -> Action {
        guard settled == link, state == .preparing || state == .ready, let since = resolvedAt,
            since.duration(to: now) >= Self.settleTime
        else { return .none }
        resolvedAt = nil
        let failures = backoff.attempts
        backoff.reset()
        return .linkSettled(afterFailures: failures)
    }

    /// The link that fell as soon as it came up (``Action/linkLostEarly(failedAttempts:)``)
    /// went with its adapter (powered off, unplugged): not a failed connect after all.
    public mutating func linkLossForgiven() {
        // Only an early loss leaves a retry floor (a failed Connect backs off instead).
        guard case .absent = state, retryFloor != nil else { return }
        backoff.forgetOne()
        retryFloor = nil
        lastFailure = nil
    }

    /// The link `link` was to be prepared on is not there (BlueZ shows no link): it is lost.
    public mutating func linkMissing(link missing: UInt64, now: ContinuousClock.Instant) -> Action {
        guard state == .preparing || state == .ready, missing == link else { return .none }
        return disconnected(now: now)
    }

    /// A connect attempt (or the resolve after it) failed or timed out.
    public mutating func connectFailed(
        _ errorClass: ConnectErrorClass, now: ContinuousClock.Instant
    ) -> Action {
        switch state {
        case .connecting:
            attemptStartedAt = nil
            return handleFailure(errorClass, now: now)
        case .resolving:
            // The link is up but unusable: tear it down, then handle the failure.
            state = .disconnecting(then: .failure(errorClass))
            lastFailure = errorClass
            return endLink(.disconnect(failWaiters: errorClass == .permanent ? .failed : nil))
        case .disconnecting(let then):
            // Our Disconnect cancelled the connect: the disconnect is complete.
            return finishDisconnect(then, now: now)
        default:
            return .none  // stale outcome of a cancelled attempt
        }
    }

    /// The automatic connect found every connection slot of its adapter taken (and nobody
    /// waits for the board): it waits its turn in ``BoardPhase/standby``, without a
    /// connect call, a retry timer or a failure. More boards than slots is normal.
    public mutating func slotUnavailable(now: ContinuousClock.Instant) -> Action {
        guard case .connecting = state else { return .none }
        attemptStartedAt = nil
        state = .standby
        return .none
    }

    /// `Connected` became false, or the actor's `Device1.Disconnect` call returned.
    /// `withAdapter`: the link went with its adapter (powered off, unplugged), which is no
    /// failed connect however young the link was.
    public mutating func disconnected(now: ContinuousClock.Instant, withAdapter: Bool = false) -> Action {
        switch state {
        case .resolving, .preparing, .ready:
            // Lost before it was resolved, or within the settle time after: the connect failed.
            // Moments after its adapter went, a link that falls (a stale one adopted) went with
            // that adapter too: the board is still moving.
            let moving = withAdapter || movedAt.map { $0.duration(to: now) < Self.moveGrace } ?? false
            let early = !moving
                && (state == .resolving || resolvedAt.map { $0.duration(to: now) < Self.settleTime } ?? false)
            guard wanted else {
                state = .idle
                return endLink(.abandonConnection(failWaiters: nil))
            }
            // Link lost: reconnect once the board is seen advertising again (a board that
            // lost its link because it was switched off or left would only tie up the
            // adapter's connect queue; one that is still there advertises again at once).
            state = moving && !withAdapter ? .absent(since: movedAt ?? now, moving: true) : .absent(since: now, moving: false)
            linkLostAt = now
            guard early else { return endLink(.abandonConnection(failWaiters: nil)) }
            // A failed connect: its retry waits the streak's backoff (past the cap of
            // attempts, the next advertisement starts afresh).
            lastFailure = .transient
            if case .retry(let delay) = backoff.next(after: .transient) { retryFloor = delay } else { retryFloor = nil }
            let attempts = backoff.attempts
            if retryFloor == nil { backoff.reset() }
            return endLink(.linkLostEarly(failedAttempts: attempts))
        case .disconnecting(let then):
            return finishDisconnect(then, now: now)
        default:
            return .none
        }
    }

    /// The board advertised (device added, or RSSI/ManufacturerData changed).
    public mutating func advertisementSeen(now: ContinuousClock.Instant) -> Action {
        guard case .absent(let since, _) = state else { return .none }
        // Back after a link that fell at once: the streak goes on, with its backoff.
        let floor = retryFloor ?? backoff.policy.minimumDelay
        if retryFloor == nil { backoff.reset() }
        retryFloor = nil
        guard wanted else {
            state = .idle
            backoff.reset()
            return .none
        }
        let elapsed = since.duration(to: now)
        if elapsed >= floor { return beginConnect() }
        let token = newToken()
        state = .backingOff(token: token)
        return .scheduleRetry(after: floor - elapsed, token: token)
    }

    /// The `Device1` object was removed from BlueZ (InterfacesRemoved).
    public mutating func deviceVanished(now: ContinuousClock.Instant) -> Action {
        // No adapter knows the board any more: it is gone, not about to relink.
        linkLostAt = nil
        switch state {
        case .idle, .standby, .backingOff:
            state = .absent(since: now, moving: false)
            return .none
        case .connecting, .resolving, .preparing, .ready:
            state = .absent(since: now, moving: false)
            attemptStartedAt = nil
            return endLink(.abandonConnection(failWaiters: .absent))
        case .disconnecting(let then):
            state = .absent(since: now, moving: false)
            if then == .reconnect { wanted = true }
            return endLink(.abandonConnection(failWaiters: .absent))
        case .waitingForAdapter:
            state = .waitingForAdapter(present: false)
            return .none
        case .absent, .failed, .forgotten:
            return .none
        }
    }

    /// The adapter was powered off (or went away): nothing connects until it is back.
    public mutating func adapterPoweredOff(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .forgotten, .failed, .waitingForAdapter:
            return .none
        case .connecting, .resolving, .preparing, .ready, .disconnecting:
            state = .waitingForAdapter(present: true)
            attemptStartedAt = nil
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
    public mutating func adapterPoweredOn(now: ContinuousClock.Instant) -> Action {
        guard case .waitingForAdapter(let present) = state else { return .none }
        backoff.reset()
        retryFloor = nil
        guard present else {
            // A board moving off its adapter when it was powered off (reset, as a stuck one
            // is) is still about to be heard: a call waits for it as before.
            if let movedAt, movedAt.duration(to: now) < Self.moveGrace {
                state = .absent(since: movedAt, moving: true)
            } else {
                state = .absent(since: now, moving: false)
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
    public mutating func linkAdapterWent(heardElsewhere: Bool, now: ContinuousClock.Instant) -> Action {
        movedAt = now
        guard case .absent = state else { return .none }
        state = .absent(since: now, moving: true)
        return heardElsewhere ? advertisementSeen(now: now) : .none
    }

    /// An adapter came (plugged in, powered on): a board waiting to retry, or waiting for a
    /// slot, tries now.
    public mutating func connectionRoomAppeared(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .backingOff where wanted, .standby where wanted: return beginConnect()
        default: return .none
        }
    }

    /// The retry timer scheduled with `token` fired.
    public mutating func backoffTimerFired(token: UInt64, now: ContinuousClock.Instant) -> Action {
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
    public mutating func disconnectRequested(now: ContinuousClock.Instant, evicted: Bool = false) -> Action {
        if evicted, state == .ready {
            // Still wanted: it takes a slot again when one is free.
            state = .disconnecting(then: .standby)
            return endLink(.disconnect(failWaiters: nil))
        }
        wanted = false
        switch state {
        case .connecting(inFlight: false):
            state = .idle
            return endLink(.abandonConnection(failWaiters: .cancelled))
        case .connecting(inFlight: true), .resolving:
            state = .disconnecting(then: .idle)
            attemptStartedAt = nil
            return endLink(.disconnect(failWaiters: .cancelled))
        case .preparing, .ready:
            state = .disconnecting(then: .idle)
            return endLink(.disconnect(failWaiters: nil))
        case .disconnecting(let then):
            if then == .reconnect { state = .disconnecting(then: .idle) }
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
    public mutating func forget(now: ContinuousClock.Instant) -> Action {
        let previous = state
        state = .forgotten
        wanted = false
        switch previous {
        case .forgotten:
            return .none
        case .connecting(inFlight: true), .resolving, .preparing, .ready, .disconnecting:
            return endLink(.disconnect(failWaiters: .notFound))
        case .connecting(inFlight: false):
            return endLink(.abandonConnection(failWaiters: .notFound))
        case .idle, .standby, .backingOff, .absent, .waitingForAdapter, .failed:
            return .failWaiters(.notFound)
        }
    }

    // MARK: - Work on the link

    /// A call's operation, or the LED put back, starts on the board: its link is not given away.
    public mutating func workStarted() {
        work += 1
    }

    /// That work ended; true when the board has no work left (its link may be given away).
    public mutating func workEnded() -> Bool {
        work = max(0, work - 1)
        return work == 0
    }

    // MARK: - Helpers

    /// The link (or the connect) ends with `action`: work of this link is stale from now on.
    private mutating func endLink(_ action: Action) -> Action {
        link &+= 1
        resolvedAt = nil
        return action
    }

    private mutating func beginConnect() -> Action {
        state = .connecting(inFlight: false)
        retryFloor = nil
        linkLostAt = nil
        attemptStartedAt = nil
        return .startConnect
    }

    private mutating func newToken() -> UInt64 {
        nextToken &+= 1
        return nextToken
    }

    private mutating func handleFailure(_ errorClass: ConnectErrorClass, now: ContinuousClock.Instant) -> Action {
        lastFailure = errorClass
        switch backoff.next(after: errorClass) {
        case .retry(let delay):
            guard wanted else {
                state = .idle
                return .failWaiters(errorClass.errorCode)
            }
            let token = newToken()
            state = .backingOff(token: token)
            return .scheduleRetry(after: delay, token: token)
        case .waitForAdvertisement:
            // No adapter hears it yet, moments after its adapter went: it is moving, and the
            // callers waiting for it go on waiting (within their deadline).
            if errorClass == .absent, let movedAt, movedAt.duration(to: now) < Self.moveGrace {
                state = .absent(since: movedAt, moving: true)
                return .none
            }
            state = .absent(since: now, moving: false)
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
