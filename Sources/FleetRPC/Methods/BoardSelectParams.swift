/// Parameters of `boards.connect`, `boards.disconnect` and `boards.forget`.
public struct BoardSelectParams: Sendable, Hashable, Codable {
    /// The boards to act on.
    public var select: Selection

    public init(select: Selection) {
        self.select = select
    }
}
