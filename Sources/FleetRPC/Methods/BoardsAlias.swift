public import JSONRPC

extension FleetMethods {
    /// `boards.alias`.
    public enum BoardsAlias: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "boards.alias",
            summary: "Give a board an alias that selections can use; an empty alias removes it.",
            params: [
                RPCParamDescriptor("address", .address, required: true, "The board's Bluetooth address."),
                RPCParamDescriptor("alias", .string(), required: true, "The alias; empty removes it."),
            ],
            result: RPCResultDescriptor("board", "The board after the change.", schema: Schemas.boardInfo),
            access: .write,
            errors: [.permissionDenied, .boardNotFound])

        public struct Params: RPCMethodParams, Codable, Hashable {
            /// The board's Bluetooth address.
            public var address: BoardAddress
            /// The new alias; an empty string removes it.
            public var alias: String

            public init(address: BoardAddress, alias: String) {
                self.address = address
                self.alias = alias
            }
        }
        public typealias Result = BoardInfo
    }
}
