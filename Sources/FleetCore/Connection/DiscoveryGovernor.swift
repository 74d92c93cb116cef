import BlueZ
import Logging

/// Keeps the fleet's discovery session on while the adapter is powered, except while
/// connects are wanted: with discovery on, the kernel sends LE Create Connection only at a
/// discovery-window boundary (measured on real BlueZ: `Connect` took 9.8–10.2 s, against
/// 0.03–0.07 s with discovery stopped; bleak's documentation gives the same advice).
///
/// A board about to connect takes a ``hold()`` before it queues for the adapter's connect
/// permit and gives it back after its attempt, so discovery stays off for a whole burst of
/// queued connects and resumes when the last one is done. `hold()` returns once discovery
/// is stopped. Start/Stop calls are made by one caller at a time; the others wait until the
/// session matches what everyone wants.
///
/// A long burst (a rotation of many boards through few slots) must not make BlueZ forget
/// the boards waiting in line: it removes an unconnected device `TemporaryTimeout` (30 s by
/// default) after it last heard it, and the fleet would then take it for switched off. So
/// between two connects, ``refreshIfPausedLong(heard:)`` lets discovery run for a moment
/// once it has been paused for ``longestPause``.
actor DiscoveryGovernor {
    /// Paused longer than this, discovery runs for a moment between two connects; below
    /// BlueZ's default TemporaryTimeout (30 s).
    static let longestPause: Duration = .seconds(20)
    /// The longest such moment (it ends sooner once every waiting board was heard).
    static let refreshWindow: Duration = .seconds(2)
    private let client: BlueZClient
    private var filter: DiscoveryFilter
    private let logger: Logger
    /// The powered adapter to discover on; nil while it is off, missing, or BlueZ is gone.
    private var adapter: BlueZAdapter?
    private var holds = 0
    /// Whether our discovery session is on, as far as our calls tell.
    private var running = false
    /// A caller is making Start/Stop calls; the others wait in `settled`.
    private var reconciling = false
    private var settled: [CheckedContinuation<Void, Never>] = []
    /// Since when our session has been paused for connects (nil while it runs).
    private var pausedSince: ContinuousClock.Instant?
    /// A refresh runs discovery although connects hold it.
    private var refreshing = false
    /// The adapter came (back): BlueZ forgot what it heard (its RSSI), and the boards in
    /// range are heard again only while discovery runs, so the next connect lets it run for
    /// a moment first, however short the pause (a reset adapter with connects queued for
    /// calls would otherwise hear nothing for ``longestPause``).
    private var listenFirst = false

    /// A StartDiscovery that failed is tried again after ``retryDelay`` (BlueZ refuses one
    /// now and then: an adapter that has just come back, a call that reached a bluetoothd
    /// that was dying): discovery must not stay off with nothing left to start it.
    static let retryDelay: Duration = .seconds(2)
    private var retry: Task<Void, Never>?
    /// StartDiscovery failures in a row: the first is a warning, the others debug.
    private var startFailures = 0

    /// Told whether each Start/Stop completed or timed out: the controller's health.
    private let health: AdapterHealthMonitor

    init(client: BlueZClient, filter: DiscoveryFilter, logger: Logger, health: AdapterHealthMonitor) {
        self.client = client
        self.filter = filter
        self.logger = logger
        self.health = health
    }

    /// The adapter is powered (`adapter`), or off/missing (`nil`). BlueZ ends every discovery
    /// session when an adapter powers off or goes away, so a new adapter starts from none.
    /// Returns at once: the Start/Stop calls that follow run in a task of their own, since one
    /// to a controller that hangs waits out its timeout, and the caller (the fleet's mirror,
    /// which tells every adapter's power) must not wait with it (the simulation found the
    /// fleet seeing an adapter powered on 10 s late, its boards answered absent meanwhile).
    func setAdapter(_ adapter: BlueZAdapter?) {
        if adapter?.path != self.adapter?.path || adapter == nil { running = false }
        if adapter != nil, self.adapter == nil { listenFirst = true }
        self.adapter = adapter
        Task { await self.reconcile() }
    }

    /// The adapter was powered off and on (a recovery step): BlueZ ended our session, which
    /// starts again if nothing holds it (the adapter's own Powered changes may reach the
    /// fleet as none, when the mirror sees off and on at once).
    func sessionEnded() async {
        running = false
        listenFirst = true
        await reconcile()
    }

    /// Stops discovery (if this is the first hold) and returns once it is stopped.
    func hold() async {
        holds += 1
        await reconcile()
    }

    /// Gives a hold back; discovery resumes when none is left.
    func release() async {
        holds = max(0, holds - 1)
        await reconcile()
    }

    /// Makes sure discovery runs now if nothing holds it (e.g. for a scan).
    func resume() async {
        await reconcile()
    }

    /// Called with the adapter's connect permit held (no connect procedure in progress
    /// there; a board before may still be resolving its services): when
    /// discovery has been paused for `pausedFor` (``longestPause`` unless said), runs it until
    /// `heard` says the boards waiting were heard again, or for ``refreshWindow`` at most, and
    /// for `atLeast` (a board switched on again while the adapter rotates others through its
    /// slots is heard only in such a moment: it is not in line, nothing else tells when it is
    /// back).
    func refreshIfPausedLong(
        atLeast: Duration = .zero, pausedFor: Duration = longestPause, heard: @escaping @Sendable (BlueZObjectTree) -> Bool
    ) async {
        guard let since = pausedSince, listenFirst || client.clock.since(since) >= pausedFor, let adapter,
            !refreshing
        else { return }
        listenFirst = false
        logger.debug("discovery resumed for a moment: boards waiting for a slot must stay known to BlueZ",
                     metadata: ["ble.adapter": "\(adapter.name)"])
        refreshing = true
        let start = client.clock.now
        await reconcile()
        _ = try? await client.mirror.wait(timeout: Self.refreshWindow, description: "boards heard again") {
            heard($0.tree) ? .done(()) : .pending
        }
        let left = atLeast - client.clock.since(start)
        if left > .zero { try? await client.clock.sleep(for: left) }
        refreshing = false
        await reconcile()
    }

    /// A board that this adapter has not heard (yet) would rather connect here than free a
    /// slot elsewhere: restart the running session, so that the controller reports every
    /// board in range at once (a new scan resets its duplicate filter; within one, a
    /// controller may report a board only once in ~10 s). At most every ``kickInterval``.
    func kick() async {
        guard running, holds == 0, !reconciling, let adapter else { return }
        if let lastKick, client.clock.since(lastKick) < Self.kickInterval { return }
        lastKick = client.clock.now
        kicking = true
        await reconcile()  // stops: `wanted` is false while kicking
        kicking = false
        await reconcile()  // and starts again
        logger.debug("discovery restarted to hear every board again", metadata: ["ble.adapter": "\(adapter.name)"])
    }

    static let kickInterval: Duration = .seconds(2)
    private var lastKick: ContinuousClock.Instant?
    private var kicking = false

    /// How long a Start/Stop waits for the adapter's `Discovering` to follow.
    static let settleTimeout: Duration = .seconds(1)

    /// Waits until the adapter's `Discovering` follows; whether it did.
    private func settle(_ adapter: BlueZAdapter, discovering: Bool) async -> Bool {
        let path = adapter.path
        return (try? await client.mirror.wait(
            timeout: Self.settleTimeout, description: "Discovering \(discovering) on \(adapter.name)"
        ) { snapshot -> MirrorWaitStep<Void> in
            guard let current = snapshot.tree.adapter(at: path) else { return .done(()) }
            return current.discovering == discovering ? .done(()) : .pending
        }) != nil
    }

    /// Whether a failed discovery command means the controller did not answer in time.
    static func timedOut(_ error: any Error) -> Bool {
        switch BlueZError(error) {
        case .timeout: true
        case .failed(let message): message.lowercased().contains("timed out") || message.lowercased().contains("timeout")
        default: false
        }
    }

    /// Discovery reports what `filter` lets through from now on: a session running is
    /// started again with it (BlueZ merges every client's filter at each start).
    func setFilter(_ filter: DiscoveryFilter) async {
        guard filter != self.filter else { return }
        self.filter = filter
        guard running, !reconciling, adapter != nil else { return }
        kicking = true
        await reconcile()
        kicking = false
        await reconcile()
    }

    /// Stops discovery and starts it again now (a recovery step), whatever the last restart.
    func restart() async {
        guard let adapter else { return }
        lastKick = client.clock.now
        kicking = true
        await reconcile()
        kicking = false
        await reconcile()
        logger.debug("discovery restarted to recover the adapter", metadata: ["ble.adapter": "\(adapter.name)"])
    }

    private var wanted: Bool { adapter != nil && !kicking && (holds == 0 || refreshing) }

    private func reconcile() async {
        if reconciling {
            await withCheckedContinuation { settled.append($0) }
            return
        }
        reconciling = true
        // Re-check after every call: holds and the adapter may change while we await.
        while wanted != running, let adapter {
            let start = wanted
            do {
                // Whoever drives this reconciliation (a board whose connect is being cancelled,
                // a client's call at its deadline) must not cancel the call: a cancelled
                // StartDiscovery is no answer from the controller, and counted as one it made
                // a working adapter look stuck (power-cycled, every link dropped).
                let (client, filter) = (self.client, self.filter)
                try await Task {
                    if start {
                        try await client.startDiscovery(adapter: adapter, filter: filter)
                    } else {
                        try await client.stopDiscovery(adapter: adapter)
                    }
                }.value
                // bluetoothd answers before the controller has followed. A StartDiscovery
                // that arrives while its stop is still completing is taken as done while
                // the controller stays idle (measured on real BlueZ 5.66: an adapter deaf for
                // 20 s after a quick stop and start). So each change waits until the
                // adapter's Discovering says so (bounded: another client's session may keep
                // it on).
                // Discovering following is the controller at work; one that does not
                // follow in time proves nothing (another client's scan may hold it on).
                let followed = await settle(adapter, discovering: start)
                if followed { health.command(completed: true) }
                // A start the adapter did not follow: BlueZ took it (seen after bluetoothd
                // restarted, the adapter just powered) but the controller may never scan.
                // Looked at again shortly; a session still not running is started afresh.
                if start, !followed { scheduleCheck() }
                if start, followed { restartsForStoppedScan = 0 }
                running = start
                pausedSince = start ? nil : client.clock.now
                if start { startFailures = 0 }
                logger.debug(start ? "discovery on" : "discovery paused for connects", metadata: ["ble.adapter": "\(adapter.name)"])
            } catch {
                if Self.timedOut(error) { health.command(completed: false) }
                if start {
                    // The adapter changed during the call (BlueZ went and came back): try the
                    // new one at once; else again after a moment.
                    if self.adapter?.path == adapter.path, self.adapter != nil {
                        logger.log(
                            level: startFailures == 0 ? .warning : .debug, "could not start discovery; trying again shortly",
                            metadata: ["ble.adapter": "\(adapter.name)", "error": "\(error)"])
                        startFailures += 1
                        scheduleRetry()
                        break
                    }
                    continue
                }
                // "No discovery started": it is off, which is what was asked for.
                running = false
                pausedSince = client.clock.now
            }
        }
        if adapter == nil {
            running = false
            pausedSince = nil
        }
        reconciling = false
        let waiting = settled
        settled = []
        for continuation in waiting { continuation.resume() }
    }

    /// The adapter's `Discovering` turned false. While our session is on and wanted, BlueZ or
    /// the controller ended the scan without a word to us: nothing would start it again
    /// (seen on real BlueZ 5.66 after bluetoothd crashed and came back: the adapter showed
    /// `Discovering` false for good, every board unheard). Looked at again shortly, and
    /// started afresh (stopped and started: BlueZ may still count our session) if the scan is
    /// still off.
    func discoveringStopped() {
        guard running, wanted, !reconciling else { return }
        scheduleCheck()
    }

    private var check: Task<Void, Never>?
    /// Restarts of a scan that stopped by itself since one last followed: said once.
    private var restartsForStoppedScan = 0

    private func scheduleCheck() {
        guard check == nil else { return }
        check = Task { [weak self, clock = client.clock] in
            try? await clock.sleep(for: Self.retryDelay)
            await self?.checkFired()
        }
    }

    private func checkFired() async {
        check = nil
        guard running, wanted, !reconciling, let adapter else { return }
        guard let current = await client.mirror.tree.adapter(at: adapter.path), current.powered, !current.discovering else { return }
        logger.log(
            level: restartsForStoppedScan == 0 ? .info : .debug, "the adapter stopped scanning by itself; discovery started again",
            metadata: ["ble.adapter": "\(adapter.name)"])
        restartsForStoppedScan += 1
        await restart()
    }

    private func scheduleRetry() {
        guard retry == nil else { return }
        retry = Task { [weak self, clock = client.clock] in
            try? await clock.sleep(for: Self.retryDelay)
            await self?.retryFired()
        }
    }

    private func retryFired() async {
        retry = nil
        await reconcile()
    }
}
