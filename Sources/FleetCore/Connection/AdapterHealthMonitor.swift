import BlueZ
import Synchronization

/// One adapter's ``AdapterHealth``, fed from wherever the fleet sees its controller at
/// work (a discovery command, a connect, an advertisement) without a hop to the fleet: an
/// event that asks for an action hands it to `report`, which the fleet serves.
final class AdapterHealthMonitor: Sendable {
    let path: AdapterPath
    private struct State {
        var health: AdapterHealth
        /// When a connect through the adapter last succeeded.
        var lastConnected: ContinuousClock.Instant?
        /// The newest advertisement already told to the health.
        var lastHeard: ContinuousClock.Instant?
    }
    private let state: Mutex<State>
    let clock: any RadioClock
    private let report: @Sendable (AdapterPath, AdapterHealth.Action) -> Void

    init(path: AdapterPath, clock: any RadioClock, report: @escaping @Sendable (AdapterPath, AdapterHealth.Action) -> Void) {
        self.path = path
        self.clock = clock
        self.state = Mutex(State(health: AdapterHealth(now: clock.now)))
        self.report = report
    }

    /// Feeds one event; an action is reported to the fleet.
    func observe(_ event: (inout AdapterHealth, ContinuousClock.Instant) -> AdapterHealth.Action) {
        let action = state.withLock { event(&$0.health, clock.now) }
        if action != .none { report(path, action) }
    }

    /// The health now (its condition, its last recovery).
    var current: AdapterHealth { state.withLock { $0.health } }

    /// Whether boards may be placed on the adapter (its controller is not being recovered).
    var isUsable: Bool { state.withLock { $0.health.isUsable } }

    /// When a connect through the adapter last succeeded.
    var lastConnected: ContinuousClock.Instant? { state.withLock { $0.lastConnected } }

    /// A connect through the adapter succeeded.
    func connected() {
        state.withLock { $0.lastConnected = clock.now }
        observe { $0.saw(.connected, now: $1) }
    }

    /// The adapter reported an advertisement at `time` (told once per newer one).
    func heard(at time: ContinuousClock.Instant) {
        let newer = state.withLock { state -> Bool in
            guard state.lastHeard.map({ time > $0 }) ?? true else { return false }
            state.lastHeard = time
            return true
        }
        if newer { observe { health, _ in health.saw(.heard, now: time) } }
    }

    /// The recovery step `step` was carried out.
    func stepCompleted(_ step: RecoveryStep) {
        observe { $0.stepCompleted(step, now: $1) }
    }

    /// A command to the controller completed, or timed out (`aboutALink`: a question about
    /// one of its links; see ``AdapterHealth/commandTimedOut(now:aboutALink:)``).
    func command(completed: Bool, aboutALink: Bool = false) {
        observe { completed ? $0.saw(.commandCompleted, now: $1) : $0.commandTimedOut(now: $1, aboutALink: aboutALink) }
    }
}
