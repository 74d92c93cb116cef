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

        public struct Params: RPCMethodParams, Hashable {
            /// The board's Bluetooth address.
            public var address: BoardAddress
            /// The new alias; an empty string removes it.
            public var alias: String

            public init(address: BoardAddress, alias: String) {
                self.address = address
                self.alias = alias
            }

            public init(checked params: RPCCheckedParams) throws(RPCError) {
                guard let address = try params.typed("address", as: BoardAddress.self) else {
                    throw .invalidParams("missing required parameter \"address\"")
                }
                self.init(address: address, alias: try params.string("alias"))
            }
        }
        public typealias Result = BoardInfo
    }
}
