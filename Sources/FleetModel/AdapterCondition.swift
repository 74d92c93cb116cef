/// Whether an adapter's controller works, as `daemon.status` says it.
public enum AdapterCondition: String, Sendable, Hashable, Codable, CaseIterable {
    case ok
    /// Stuck; a recovery step runs, and its boards are served by the other adapters.
    case recovering
    /// Every recovery step failed; the reset is tried again now and then.
    case failed
}

/// What made an adapter's controller count as stuck.
public enum AdapterSymptom: String, Sendable, Hashable, Codable, CaseIterable {
    /// Commands to it (BlueZ's, the kernel's) timed out.
    case commandsTimeOut = "commands-time-out"
    /// It heard no advertisement while boards it served were heard through other adapters.
    case hearsNothing = "hears-nothing"
    /// Its connects kept failing while other adapters' succeeded.
    case connectsFail = "connects-fail"
    /// Its links, which carried notifications every few seconds, all fell silent at once
    /// while other adapters' traffic went on (a controller that sends nothing more; the
    /// kernel gives such links up only tens of seconds later).
    case linksSilent = "links-silent"
}

/// A step that brings a stuck controller back, in the order they escalate.
public enum RecoveryStep: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// Discovery stopped and started again.
    case restartDiscovery = "restart-discovery"
    /// The adapter powered off and on through BlueZ.
    case powerCycle = "power-cycle"
    /// The controller reset through the kernel.
    case reset

    public static func < (lhs: RecoveryStep, rhs: RecoveryStep) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The step after this one, if any.
    public var next: RecoveryStep? {
        let steps = RecoveryStep.allCases
        let index = steps.firstIndex(of: self)! + 1
        return index < steps.count ? steps[index] : nil
    }
}
