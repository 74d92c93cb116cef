public import JSONRPC

extension FleetMethods {
    /// `boards.disconnect`.
    public enum BoardsDisconnect: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "boards.disconnect",
            summary: "Disconnect the selected boards and stop reconnecting them.",
            params: [RPCParamDescriptor("select", .selection, required: true, "The boards to disconnect.")],
            result: boardOutcomes,
            access: .write,
            errors: boardErrors)

        public typealias Params = BoardSelectParams
        public typealias Result = FleetResult<Done>
    }
}
