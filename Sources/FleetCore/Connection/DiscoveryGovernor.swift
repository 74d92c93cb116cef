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
actor DiscoveryGovernor {
    private let client: BlueZClient
    private let filter: DiscoveryFilter
    private let logger: Logger
    /// The powered adapter to discover on; nil while it is off, missing, or BlueZ is gone.
    private var adapter: BlueZAdapter?
    private var holds = 0
    /// Whether our discovery session is on, as far as our calls tell.
    private var running = false
    /// A caller is making Start/Stop calls; the others wait in `settled`.
    private var reconciling = false
    private var settled: [CheckedContinuation<Void, Never>] = []

    init(client: BlueZClient, filter: DiscoveryFilter, logger: Logger) {
        self.client = client
        self.filter = filter
        self.logger = logger
    }

    /// The adapter is powered (`adapter`), or off/missing (`nil`). BlueZ ends every discovery
    /// session when an adapter powers off or goes away, so a new adapter starts from none.
    func setAdapter(_ adapter: BlueZAdapter?) async {
        if adapter?.path != self.adapter?.path || adapter == nil { running = false }
        self.adapter = adapter
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

    private var wanted: Bool { adapter != nil && holds == 0 }

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
                if start {
                    try await client.startDiscovery(adapter: adapter, filter: filter)
                } else {
                    try await client.stopDiscovery(adapter: adapter)
                }
                running = start
                logger.debug(start ? "discovery on" : "discovery paused for connects", metadata: ["ble.adapter": "\(adapter.name)"])
            } catch {
                if start {
                    logger.warning("could not start discovery", metadata: ["ble.adapter": "\(adapter.name)", "error": "\(error)"])
                    break
                }
                // "No discovery started": it is off, which is what was asked for.
                running = false
            }
        }
        if adapter == nil { running = false }
        reconciling = false
        let waiting = settled
        settled = []
        for continuation in waiting { continuation.resume() }
    }
}
