import BlueZ

/// What the calls (``BoardCommands``) ask of the board: its ready link, and what they changed.
extension Board {
    /// Runs `operation` on the board's ready link (its session). When the link drops during
    /// the operation, it waits for the board to be ready again and retries, until the
    /// caller's deadline cancels it (a board that vanished mid-command ends as `absent` or
    /// `timeout`, not as a stray error). The link is not given away while the operation runs.
    func whenReady<T: Sendable>(_ operation: @Sendable (BoardSession) async throws -> T) async throws -> T {
        update { core, _ in core.workStarted() }
        defer {
            update { $0.linkUsed(now: $1) }
            workEnded()
        }
        while true {
            try await ensureReady()
            let session = currentSession()
            do {
                return try await operation(session)
            } catch let error as FleetError where error.code == .notConnected {
                logger.debug("link lost during an operation; retrying once the board is back", metadata: ["error": "\(error)"])
                await linkWentDown(session)
            }
        }
    }

    /// An operation failed because the link of `session` went: waits (bounded) until BlueZ
    /// reports it down, and makes sure the state machine has it too (the fleet hands the same
    /// change to this actor a moment later; it is then a no-op), so that the next
    /// `ensureReady` connects again instead of retrying on a link that is gone.
    private func linkWentDown(_ session: BoardSession) async {
        if await gatt.linkIsDown(session.device?.path, within: .seconds(2)), machine.isReady, machine.link == session.link {
            update { $0.linkWentDown(now: $1) }
        }
    }

    /// Whether the board has a ready link now, and its profile.
    var linkAndProfile: (ready: Bool, profile: BoardProfile) { (machine.isReady, profile) }

    /// The ready link's session (one with no characteristics found yet when the board became
    /// ready without one: each is looked up at its first use).
    private func currentSession() -> BoardSession {
        if let session, session.link == machine.link { return session }
        let fresh = BoardSession(link: machine.link, device: core.device, profile: profile, gatt: gatt)
        session = fresh
        return fresh
    }

    /// An identify's blink was cut short (the link fell, a write failed, the caller's
    /// deadline): the switch is put back now if the link is still up, else when the board is
    /// ready again.
    func blinkCutShort() {
        if switches.leftMidBlink != nil, machine.isReady { putSwitchesBack(link: machine.link) }
    }

    /// Disconnects for a user (or to free a slot) and returns once the link is down. The
    /// board stays disconnected until the next command needs it.
    func disconnect(timeout: Duration = .seconds(10), evicted: Bool = false) async {
        // The device of the link, taken before the request drops the link's bookkeeping.
        let linked = core.device
        update { $0.disconnectRequested(evicted: evicted, now: $1) }
        guard let linked else { return }
        let path = linked.path
        let down = await gatt.linkIsDown(path, within: timeout)
        // The board's phase follows the link at once (the disconnect's own task reports it
        // too, a moment later: then a no-op), so no count shows it linked once it is not.
        if down { update { $0.disconnectReturned(from: path, now: $1) } }
    }

    /// Gives an idle link away to free its slot for another board (the board waits in
    /// standby); false, and nothing done, when the board is no longer idle: a call took it
    /// since the fleet looked.
    func release() async -> Bool {
        guard machine.isReady, !core.isBusy, waiters.isEmpty else { return false }
        await disconnect(evicted: true)
        return true
    }

    /// Removes the board from the fleet: disconnects it and fails anyone waiting for it.
    /// Returns its device objects (one per adapter that knows it), for BlueZ to forget.
    func forget() -> [BlueZDevice] {
        let known = core.devices.all
        update { $0.forget(now: $1) }
        return known
    }
}
