public import FleetRPC

/// blectl's exit codes (sysexits(3) where one fits). Scripts rely on them.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// Everything succeeded.
    case ok = 0
    /// The call failed, or some boards of a fleet-wide command failed.
    case failed = 1
    /// The command line is wrong.
    case usage = 2
    /// blefleetd cannot be reached (EX_UNAVAILABLE).
    case unavailable = 69
    /// The user may not talk to blefleetd or call this method (EX_NOPERM).
    case noPermission = 77

    /// The status of a fleet-wide result: failed when any board failed.
    public static func of<Value>(_ result: FleetResult<Value>) -> ExitStatus {
        result.failedCount > 0 ? .failed : .ok
    }
}
