/// Exponential backoff with jitter and a cap, per error class.
///
/// The delay for the n-th consecutive failure (n ≥ 1) is
/// `base × multiplier^(n-1)`, capped at ``maximumDelay``, then scaled by a random factor in
/// `[1 - jitter, 1 + jitter)` and clamped to `[minimumDelay, maximumDelay]`. `base` is
/// ``initialDelay`` for transient errors and ``outOfResourcesDelay`` when the controller has
/// no free slots. ``minimumDelay`` is the floor that keeps every retry path from spinning.
public struct ReconnectPolicy: Sendable, Hashable {
    /// First delay after a transient failure.
    public var initialDelay: Duration
    /// First delay after an out-of-resources failure.
    public var outOfResourcesDelay: Duration
    /// Growth factor per consecutive failure (≥ 1).
    public var multiplier: Double
    /// Cap on any delay.
    public var maximumDelay: Duration
    /// Floor on any delay, also applied to a reconnect at the advertisement after a link loss.
    public var minimumDelay: Duration
    /// Relative jitter in `0...1`: 0.2 spreads delays over ±20 %.
    public var jitter: Double
    /// After this many consecutive transient/out-of-resources failures the board is treated
    /// as absent and waits for its next advertisement instead of retrying blindly.
    public var maximumAttempts: Int

    public init(
        initialDelay: Duration = .milliseconds(500),
        outOfResourcesDelay: Duration = .seconds(5),
        multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30),
        minimumDelay: Duration = .milliseconds(200),
        jitter: Double = 0.2,
        maximumAttempts: Int = 8
    ) {
        self.initialDelay = initialDelay
        self.outOfResourcesDelay = outOfResourcesDelay
        self.multiplier = max(1, multiplier)
        self.maximumDelay = max(maximumDelay, minimumDelay)
        self.minimumDelay = max(minimumDelay, .zero)
        self.jitter = min(max(jitter, 0), 1)
        self.maximumAttempts = max(1, maximumAttempts)
    }

    /// What to do after the `attempt`-th consecutive failure (1-based) of class
    /// `errorClass`. `random` is a uniform value in `0..<1` (injected so tests are
    /// deterministic).
    public func decision(
        after errorClass: ConnectErrorClass, attempt: Int, random: Double
    ) -> ReconnectDecision {
        switch errorClass {
        case .permanent:
            return .giveUp
        case .absent:
            return .waitForAdvertisement
        case .transient, .outOfResources:
            guard attempt < maximumAttempts else { return .waitForAdvertisement }
            let base = errorClass == .transient ? initialDelay : outOfResourcesDelay
            return .retry(after: delay(base: base, attempt: attempt, random: random))
        }
    }

    func delay(base: Duration, attempt: Int, random: Double) -> Duration {
        let baseSeconds = base.seconds
        let cap = maximumDelay.seconds
        let exponent = Double(max(0, attempt - 1))
        var seconds = min(baseSeconds * pow(multiplier, exponent), cap)
        let unit = min(max(random, 0), 1)
        seconds *= 1 + jitter * (2 * unit - 1)
        seconds = min(max(seconds, minimumDelay.seconds), cap)
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}

/// The outcome of ``ReconnectPolicy/decision(after:attempt:random:)``.
public enum ReconnectDecision: Sendable, Hashable {
    /// Try again after this delay.
    case retry(after: Duration)
    /// Stop retrying until the board advertises again.
    case waitForAdvertisement
    /// Stop for good; the board is marked failed.
    case giveUp
}

extension Duration {
    /// This duration in seconds as a floating-point number.
    var seconds: Double {
        let (s, attos) = components
        return Double(s) + Double(attos) / 1e18
    }
}

private func pow(_ base: Double, _ exponent: Double) -> Double {
    var result = 1.0
    var remaining = Int(exponent)
    while remaining > 0 && result < .greatestFiniteMagnitude {
        result *= base
        remaining -= 1
    }
    return result
}
