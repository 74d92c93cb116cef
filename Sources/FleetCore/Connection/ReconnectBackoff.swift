/// The mutable side of a ``ReconnectPolicy``: counts consecutive failures and draws jitter
/// from an injected random source. ``reset()`` after a successful connect.
public struct ReconnectBackoff: Sendable {
    /// The policy that computes delays.
    public let policy: ReconnectPolicy
    /// Consecutive failures since the last reset.
    public private(set) var attempts: Int = 0
    private var random: any RandomNumberGenerator & Sendable

    /// - Parameter random: jitter source; pass a ``SeededRandomNumberGenerator`` in tests.
    public init(
        policy: ReconnectPolicy,
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.policy = policy
        self.random = random
    }

    /// Records one more failure of `errorClass` and returns what to do.
    public mutating func next(after errorClass: ConnectErrorClass) -> ReconnectDecision {
        attempts += 1
        return policy.decision(after: errorClass, attempt: attempts, random: drawUnit())
    }

    /// Forgets past failures (after a successful connect, or a fresh advertisement).
    public mutating func reset() { attempts = 0 }

    /// Forgets the last failure (it turned out not to be one).
    public mutating func forgetOne() { attempts = max(0, attempts - 1) }

    private mutating func drawUnit() -> Double {
        Double(random.next() >> 11) / Double(1 << 53)
    }
}
