public import JSONRPC

extension FleetMethods {
    /// `boards.list`.
    public enum BoardsList: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "boards.list",
            summary: "List the known boards with their state, LED and latest temperature.",
            params: [RPCParamDescriptor("select", .selection, "Only these boards (default all).")],
            result: RPCResultDescriptor("boards", "The boards, sorted by address.", schema: Schemas.boardList),
            access: .read,
            errors: [.permissionDenied])

        public struct Params: RPCMethodParams, Codable, Hashable {
            /// Only these boards (default: all known boards).
            public var select: Selection?

            public init(select: Selection? = nil) {
                self.select = select
            }
        }
        public typealias Result = BoardsListResult
    }
}

/// Result of `boards.list` and `boards.scan`.
public struct BoardsListResult: Sendable, Hashable, Codable {
    /// The boards, sorted by address.
    public var boards: [BoardInfo]

    public init(boards: [BoardInfo]) {
        self.boards = boards
    }
}
