/// Where the radio's time comes from: the machine's clock in the daemon, a simulated one
/// (time moves only when the simulation says so) in a simulation.
///
/// Every reading of "now" and every wait in BlueZ and FleetCore goes through the clock of
/// the ``BlueZClient`` they talk to, so a simulated radio brings its own time along.
/// Instants are `ContinuousClock.Instant`s either way: a simulated clock counts from the
/// instant it was made.
public protocol RadioClock: Sendable {
    var now: ContinuousClock.Instant { get }
    /// Returns at `deadline`; throws `CancellationError` when the task is cancelled first.
    func sleep(until deadline: ContinuousClock.Instant) async throws
}

extension RadioClock {
    /// Returns after `duration`; throws `CancellationError` when the task is cancelled first.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now.advanced(by: duration))
    }

    /// How long from `instant` until now.
    public func since(_ instant: ContinuousClock.Instant) -> Duration {
        instant.duration(to: now)
    }
}

/// The machine's monotonic clock (`CLOCK_BOOTTIME`, as `ContinuousClock`).
public struct MachineClock: RadioClock {
    public init() {}
    public var now: ContinuousClock.Instant { ContinuousClock.now }
    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await Task.sleep(until: deadline, clock: .continuous)
    }
}
