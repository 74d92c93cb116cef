public import JSONRPC

extension FleetMethods {
    /// `boards.list`.
    public enum BoardsList: RPCMethod {
        public static let descriptor = describe(
            "boards.list", "List the known boards with their state, LED and latest temperature.",
            params: ["select": "Only these boards (default all)."],
            result: RPCResultDescriptor("boards", "The boards, sorted by address."), access: .read, errors: [.permissionDenied])

        public struct Params: RPCMethodParams, Hashable {
            /// Only these boards (default: all known boards).
            public var select: Selection?

            public init(select: Selection? = nil) { self.select = select }
        }
        public typealias Result = BoardsListResult
    }

    /// `boards.scan`.
    public enum BoardsScan: RPCMethod {
        public static let descriptor = describe(
            "boards.scan", "Scan for boards for a number of seconds and return every board seen.",
            params: ["seconds": RPCParamNote("How long to scan.", .number(minimum: 0.1, maximum: 300))],
            result: RPCResultDescriptor("boards", "The boards seen, sorted by address."), access: .write,
            errors: [.permissionDenied, .adapterUnavailable, .bluezUnavailable, .busy, .timeout])

        public struct Params: RPCMethodParams, Hashable {
            /// How long to scan.
            public var seconds: Double

            public init(seconds: Double) { self.seconds = seconds }
        }
        public typealias Result = BoardsListResult
    }

    /// `boards.alias`.
    public enum BoardsAlias: RPCMethod {
        public static let descriptor = describe(
            "boards.alias", "Give a board an alias that selections can use; an empty alias removes it.",
            params: ["address": "The board's Bluetooth address.", "alias": "The alias; empty removes it."],
            result: RPCResultDescriptor("board", "The board after the change."), access: .write,
            errors: [.permissionDenied, .boardNotFound])

        public struct Params: RPCMethodParams, Hashable {
            /// The board's Bluetooth address.
            public var address: BoardAddress
            /// The new alias; an empty string removes it.
            public var alias: String

            public init(address: BoardAddress, alias: String) { (self.address, self.alias) = (address, alias) }
        }
        public typealias Result = BoardInfo
    }
}

/// Result of `boards.list` and `boards.scan`.
public struct BoardsListResult: Sendable, Hashable, Codable {
    /// The boards, sorted by address.
    public var boards: [BoardInfo]

    public init(boards: [BoardInfo]) { self.boards = boards }
}
