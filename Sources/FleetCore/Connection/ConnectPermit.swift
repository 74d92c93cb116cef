import Synchronization

/// An adapter's connect permit held by one connect, given back once: when the link is up
/// (the controller is free for the next connect) or when the attempt ends, whichever comes
/// first. A connect that got its link says so to its adapter, with how long it held the
/// permit and whether it had to free a slot (`rotation`): the adapter's rotation time, which
/// the fleet's deadlines are planned with.
final class ConnectPermit: Sendable {
    private let adapter: FleetAdapter
    private let rotation: Bool
    private let acquired: ContinuousClock.Instant
    private let held = Mutex(true)
    /// When the link came up (the permit went back then).
    private let linkedAt = Mutex<ContinuousClock.Instant?>(nil)

    /// Taken: the caller holds `adapter`'s scheduler permit.
    init(adapter: FleetAdapter, rotation: Bool) {
        self.adapter = adapter
        self.rotation = rotation
        self.acquired = adapter.clock.now
    }

    /// Gives the permit back (`linked`: because the link is up); later calls do nothing.
    func release(linked: Bool = false) {
        guard held.withLock({ held in defer { held = false }; return held }) else { return }
        if linked {
            linkedAt.withLock { $0 = adapter.clock.now }
            adapter.recordLinkUp(held: adapter.clock.since(acquired), rotation: rotation)
        }
        adapter.scheduler.release()
    }

    /// The link's services are resolved: the adapter learns how long that took.
    func resolved() {
        guard let linkedAt = linkedAt.withLock({ $0 }) else { return }
        adapter.recordResolve(adapter.clock.since(linkedAt))
    }
}
