import Synchronization

/// An adapter's connect permit held by one connect, given back once: when the link is up
/// (the controller is free for the next connect) or when the attempt ends, whichever comes
/// first. A connect that had to free a slot (`rotation`) and got its link records how long
/// it held the permit: the serial part of a rotation, which the fleet's deadlines are
/// planned with.
final class ConnectPermit: Sendable {
    private let adapter: FleetAdapter
    private let rotation: Bool
    private let acquired: ContinuousClock.Instant
    private let held = Mutex(true)

    /// Taken: the caller holds `adapter`'s scheduler permit.
    init(adapter: FleetAdapter, rotation: Bool) {
        self.adapter = adapter
        self.rotation = rotation
        self.acquired = adapter.clock.now
    }

    /// Gives the permit back (`linked`: because the link is up); later calls do nothing.
    func release(linked: Bool = false) {
        guard held.withLock({ held in defer { held = false }; return held }) else { return }
        if rotation && linked { adapter.recordRotation(adapter.clock.since(acquired)) }
        adapter.scheduler.release()
    }
}
