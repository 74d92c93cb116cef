/// Parameters of `boards.list`.
public struct BoardsListParams: Sendable, Hashable, Codable {
    /// Only these boards (default: all known boards).
    public var select: Selection?

    public init(select: Selection? = nil) {
        self.select = select
    }
}
