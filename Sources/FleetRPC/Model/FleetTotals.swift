/// How many boards of a fleet-wide call succeeded and failed.
public struct FleetTotals: Sendable, Hashable, Codable {
    public var ok: Int
    public var failed: Int

    public init(ok: Int, failed: Int) {
        self.ok = ok
        self.failed = failed
    }
}
