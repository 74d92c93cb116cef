/// Whether an adapter's controller works, told from what the fleet sees of it, and the
/// escalating steps that bring a stuck one back. Pure: events in (with their time), actions
/// out, no I/O; the fleet performs the steps and reports what it sees.
///
/// A controller is stuck when its commands time out, when it hears no advertisement for a
/// while although boards it served are heard through other adapters, when its links, which
/// carried notifications every few seconds, all fall silent while other adapters' traffic
/// goes on, or when its connects keep failing while other adapters' succeed. Recovery
/// escalates: restart discovery, then power the adapter off and on through BlueZ, then
/// reset it through the kernel (links fallen silent, and questions about its links left
/// unanswered, begin with the reset: a controller whose transport hangs answers nothing, and
/// a power cycle through BlueZ waits on it); each step
/// gets a window to show the controller works again
/// (the evidence that fits the symptom: a command that completes, an advertisement heard, a
/// connect), else the next step runs. After the last step the adapter counts as failed,
/// and the reset is tried again now and then. Meanwhile placement gives its boards to the
/// other adapters.
public struct AdapterHealth: Sendable, Hashable {
    public typealias Symptom = AdapterSymptom
    public typealias Step = RecoveryStep
    public typealias Condition = AdapterCondition

    /// What the controller was seen doing: evidence that it works.
    public enum Evidence: Sendable, Hashable {
        /// A command completed (discovery started, powered on).
        case commandCompleted
        /// It reported an advertisement.
        case heard
        /// A connect through it succeeded.
        case connected

        /// Whether this shows a controller stuck with `symptom` works again.
        func clears(_ symptom: Symptom) -> Bool {
            switch (self, symptom) {
            case (.connected, _): true
            // A controller that answers a command or reports an advertisement sends again.
            case (_, .linksSilent): true
            // Connects failed: after the power cycle, an advertisement heard shows its radio
            // works, and boards are placed on it again (a connect cannot show it: a recovering
            // adapter is given none, so nothing cleared the symptom and every board it alone
            // heard stayed absent; the simulation found that). Connects that fail again
            // start another recovery.
            case (.heard, .hearsNothing), (.heard, .commandsTimeOut), (.heard, .connectsFail): true
            case (.commandCompleted, .commandsTimeOut): true
            default: false
            }
        }
    }

    /// A recovery, for `daemon.status`: why, how far it went, and how it ended.
    public struct Recovery: Sendable, Hashable {
        public var symptom: Symptom
        /// The last step taken.
        public var step: Step
        public var startedAt: ContinuousClock.Instant
        /// When the controller showed it works again; nil while it has not.
        public var recoveredAt: ContinuousClock.Instant?
    }

    /// When a symptom counts, and how long each step is given.
    public struct Thresholds: Sendable, Hashable {
        /// This many command timeouts within ``timeoutWindow`` (and no evidence since).
        public var commandTimeouts = 2
        public var timeoutWindow: Duration = .seconds(30)
        /// This many connect failures in a row, of at least ``connectFailureBoards`` boards
        /// (one board failing is the board's fault), while another adapter connected within
        /// ``othersWindow``.
        public var connectFailures = 3
        public var connectFailureBoards = 2
        public var othersWindow: Duration = .seconds(60)
        /// Nothing heard for this long while discovering, and boards it served are heard
        /// elsewhere; or nothing carried for this long over links that carried something at
        /// most ``chattyGap`` apart.
        public var silence: Duration = .seconds(10)
        /// Nothing carried for this long over links that carried something at most
        /// ``chattyGap`` apart, while other adapters' traffic goes on: the links fell silent.
        /// Shorter than ``silence``: two or more links that notified every few seconds, all
        /// silent at once, is the controller (its boards are served again only once it is reset).
        public var linksSilence: Duration = .seconds(5)
        /// A link counts for silence once two of its notifications came at most this far apart.
        public var chattyGap: Duration = .seconds(3)
        /// How many such links must fall silent together (one alone is that board's doing).
        public var silentLinks = 2
        /// How long each step has to show the controller works.
        public var window: [Step: Duration] = [.restartDiscovery: .seconds(4), .powerCycle: .seconds(8), .reset: .seconds(10)]
        /// How often a failed adapter's reset is tried again.
        public var retryFailed: Duration = .seconds(60)

        public init() {}
    }

    /// What the fleet must do.
    public enum Action: Sendable, Hashable {
        case none
        /// Run this step now (then report evidence as it comes; ``tick(now:discovering:heardElsewhere:)`` judges the window).
        case perform(Step, Symptom)
        /// Every step failed: the adapter counts as failed.
        case gaveUp(Symptom)
        /// The controller works again after a recovery.
        case recovered(Recovery)
    }

    private enum State: Sendable, Hashable {
        case healthy
        case recovering(Recovery, stepStartedAt: ContinuousClock.Instant)
        case failed(Recovery, since: ContinuousClock.Instant)
    }

    public let thresholds: Thresholds
    private var state: State = .healthy
    private var timeouts: [ContinuousClock.Instant] = []
    private var failedConnects = 0
    /// The boards whose connects failed in the streak.
    private var failedBoards: Set<BoardAddress> = []
    private var lastHeard: ContinuousClock.Instant
    /// Since when discovery has run without a break, as the ticks saw it (nil: not now).
    private var discoveringSince: ContinuousClock.Instant?
    /// The last recovery (ended or not), for `daemon.status`.
    public private(set) var lastRecovery: Recovery?

    /// How long into a power cycle an advertisement must come to show a controller whose
    /// connects failed hears again.
    static let heardAfterPowerCycle: Duration = .seconds(1)

    public init(thresholds: Thresholds = Thresholds(), now: ContinuousClock.Instant) {
        self.thresholds = thresholds
        self.lastHeard = now
    }

    public var condition: Condition {
        switch state {
        case .healthy: .ok
        case .recovering: .recovering
        case .failed: .failed
        }
    }

    /// Whether boards should be placed elsewhere.
    public var isUsable: Bool { state == .healthy }

    // MARK: Symptoms

    /// A command to the controller timed out; `aboutALink`: a question about one of its links
    /// (the controller holds links). A controller that holds links and answers no command is
    /// reset at once (issue 52): a power cycle through BlueZ would first ask it to end each link
    /// and wait on it, and only a reset frees boards whose links it keeps up on its own.
    /// One already being recovered by an earlier step (found hearing nothing: discovery
    /// restarted, or a power cycle under way) goes to the reset at its first command that
    /// times out: it answers nothing, and nothing but the reset frees its boards.
    public mutating func commandTimedOut(now: ContinuousClock.Instant, aboutALink: Bool = false) -> Action {
        if case .recovering(var recovery, _) = state, recovery.step < .reset {
            recovery.step = .reset
            lastRecovery = recovery
            state = .recovering(recovery, stepStartedAt: now)
            return .perform(.reset, recovery.symptom)
        }
        guard state == .healthy else { return .none }
        timeouts = timeouts.filter { $0.duration(to: now) < thresholds.timeoutWindow } + [now]
        guard timeouts.count >= thresholds.commandTimeouts else { return .none }
        return begin(.commandsTimeOut, now: now, from: aboutALink ? .reset : nil)
    }

    /// A connect to `board` through the adapter failed; `othersConnected`: another adapter
    /// connected a board within ``Thresholds/othersWindow``.
    public mutating func connectFailed(
        _ board: BoardAddress, now: ContinuousClock.Instant, othersConnected: Bool
    ) -> Action {
        guard state == .healthy else { return .none }
        failedConnects += 1
        failedBoards.insert(board)
        guard failedConnects >= thresholds.connectFailures, failedBoards.count >= thresholds.connectFailureBoards,
            othersConnected
        else { return .none }
        return begin(.connectsFail, now: now)
    }

    // MARK: Evidence

    /// The controller was seen working.
    public mutating func saw(_ evidence: Evidence, now: ContinuousClock.Instant) -> Action {
        if evidence == .heard || evidence == .connected { lastHeard = now }
        switch state {
        case .healthy:
            timeouts = []
            if evidence == .connected {
                failedConnects = 0
                failedBoards = []
            }
            return .none
        case .recovering(var recovery, _), .failed(var recovery, _):
            guard evidence.clears(recovery.symptom) else { return .none }
            // While a power cycle or reset runs, a command that "completes" shows nothing (a
            // discovery stopped on an adapter powered off for it): the step's own end does
            // (``stepCompleted(_:now:)``). The simulation found the adapter called working
            // again while it was still off, and calls answered for its boards "absent".
            if case .recovering = state, evidence == .commandCompleted, !stepEnded, recovery.step >= .powerCycle {
                return .none
            }
            // An advertisement already on its way when the power cycle began shows nothing.
            if case .recovering(_, let stepStartedAt) = state, evidence == .heard, recovery.symptom == .connectsFail,
                stepStartedAt.duration(to: now) < Self.heardAfterPowerCycle
            {
                return .none
            }
            recovery.recoveredAt = now
            lastRecovery = recovery
            state = .healthy
            timeouts = []
            failedConnects = 0
            failedBoards = []
            return .recovered(recovery)
        }
    }

    // MARK: Time

    /// Once a second or so: judges silence (`discovering`, and boards the adapter served are
    /// heard through other adapters: `heardElsewhere`), the silence of its links
    /// (`linksCarried`: the newest notification over its chatty links, when there are
    /// enough of them and other adapters' traffic goes on; see ``Thresholds``) and the
    /// running step's window.
    public mutating func tick(
        now: ContinuousClock.Instant, discovering: Bool, heardElsewhere: Bool,
        linksCarried: ContinuousClock.Instant? = nil
    ) -> Action {
        if !discovering {
            discoveringSince = nil
        } else if discoveringSince == nil {
            discoveringSince = now
        }
        switch state {
        case .healthy:
            if let linksCarried, linksCarried.duration(to: now) >= thresholds.linksSilence {
                return begin(.linksSilent, now: now)
            }
            // Silence counts only while discovery ran: an adapter that connects all the time
            // discovers in moments between its connects, and hears nothing in between (the
            // simulation found such an adapter taken for deaf, its boards answered absent).
            guard discovering, heardElsewhere, let since = discoveringSince,
                max(lastHeard, since).duration(to: now) >= thresholds.silence
            else { return .none }
            return begin(.hearsNothing, now: now)
        case .recovering(var recovery, let stepStartedAt):
            guard stepStartedAt.duration(to: now) >= thresholds.window[recovery.step] ?? .seconds(10) else { return .none }
            guard let next = recovery.step.next else {
                lastRecovery = recovery
                state = .failed(recovery, since: now)
                return .gaveUp(recovery.symptom)
            }
            recovery.step = next
            lastRecovery = recovery
            state = .recovering(recovery, stepStartedAt: now)
            return .perform(next, recovery.symptom)
        case .failed(let recovery, let since):
            guard since.duration(to: now) >= thresholds.retryFailed else { return .none }
            state = .failed(recovery, since: now)
            return .perform(.reset, recovery.symptom)
        }
    }

    /// Whether the running step's own command completed (a power cycle's power-on).
    private var stepEnded = false

    /// The running `step` was carried out (a power cycle or reset: the adapter is powered on
    /// again): the controller answered it.
    public mutating func stepCompleted(_ step: Step, now: ContinuousClock.Instant) -> Action {
        switch state {
        case .recovering(let recovery, _) where recovery.step == step: break
        case .failed where step == .reset: break  // the reset tried again now and then
        default: return .none
        }
        stepEnded = true
        defer { stepEnded = false }
        return saw(.commandCompleted, now: now)
    }

    /// The running `step` could not be carried out (the controller did not answer its
    /// commands: a power cycle whose power-off timed out): the next step at once, instead of
    /// waiting out a window in which nothing can show the controller works. The last step's
    /// failure waits for its window (then the adapter counts as failed).
    public mutating func stepFailed(_ step: Step, now: ContinuousClock.Instant) -> Action {
        guard case .recovering(var recovery, _) = state, recovery.step == step, let next = step.next else { return .none }
        recovery.step = next
        lastRecovery = recovery
        state = .recovering(recovery, stepStartedAt: now)
        return .perform(next, recovery.symptom)
    }

    /// The adapter was powered off, unplugged or came back: a fresh start.
    public mutating func restarted(now: ContinuousClock.Instant) {
        guard state == .healthy else { return }
        timeouts = []
        failedConnects = 0
        failedBoards = []
        lastHeard = now
    }

    /// Begins a recovery from `symptom`, at `step` (default: where that symptom begins).
    private mutating func begin(_ symptom: Symptom, now: ContinuousClock.Instant, from step: Step? = nil) -> Action {
        let recovery = Recovery(symptom: symptom, step: step ?? symptom.firstStep, startedAt: now)
        lastRecovery = recovery
        state = .recovering(recovery, stepStartedAt: now)
        timeouts = []
        failedConnects = 0
        failedBoards = []
        return .perform(recovery.step, symptom)
    }
}

extension AdapterSymptom {
    /// Where recovery begins: a controller that hears nothing may only have lost its scan;
    /// one whose commands time out or whose connects fail needs at least a power cycle; one
    /// whose links all fell silent (its transport hangs, its links may live on at the boards)
    /// is reset through the kernel at once: a power cycle through BlueZ waits on a controller
    /// that answers nothing, and only a reset frees its boards.
    var firstStep: RecoveryStep {
        switch self {
        case .hearsNothing: .restartDiscovery
        case .commandsTimeOut, .connectsFail: .powerCycle
        case .linksSilent: .reset
        }
    }
}
