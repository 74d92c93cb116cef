/// Result of `boards.list` and `boards.scan`.
public struct BoardsListResult: Sendable, Hashable, Codable {
    /// The boards, sorted by address.
    public var boards: [BoardInfo]

    public init(boards: [BoardInfo]) {
        self.boards = boards
    }
}
