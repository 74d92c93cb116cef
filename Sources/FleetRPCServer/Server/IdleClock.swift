/// When a connection that holds nothing has been silent long enough to be closed
/// (``RPCServerConfiguration/idleTimeout``): a plain value whose timer is an action it
/// returns, tested without a clock.
///
/// A connection is active when it sends a frame or a reply of its is written. It is idle
/// when it has no call in flight, holds nothing (no subscription, no lease: see
/// ``RPCConnection/holdsSomething``) and has been silent for the whole timeout.
struct IdleClock: Sendable, Hashable {
    let timeout: Duration
    private(set) var lastActivity: ContinuousClock.Instant

    init(timeout: Duration, now: ContinuousClock.Instant) {
        self.timeout = timeout
        self.lastActivity = now
    }

    /// A frame was read, or a reply written.
    mutating func active(at now: ContinuousClock.Instant) {
        if now > lastActivity { lastActivity = now }
    }

    enum TimerAction: Sendable, Hashable {
        /// Idle for the whole timeout: close the connection.
        case close
        /// Look again at this instant.
        case check(at: ContinuousClock.Instant)
    }

    /// The connection's timer fired at `now` (or its watch began). A connection with calls
    /// in flight or that holds something is looked at again a timeout later.
    func timerFired(at now: ContinuousClock.Instant, callsInFlight: Int, holdsSomething: Bool) -> TimerAction {
        if callsInFlight > 0 || holdsSomething { return .check(at: now.advanced(by: timeout)) }
        let deadline = lastActivity.advanced(by: timeout)
        return now >= deadline ? .close : .check(at: deadline)
    }
}
