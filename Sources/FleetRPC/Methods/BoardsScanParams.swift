/// Parameters of `boards.scan`.
public struct BoardsScanParams: Sendable, Hashable, Codable {
    /// How long to scan.
    public var seconds: Double

    public init(seconds: Double) {
        self.seconds = seconds
    }
}
