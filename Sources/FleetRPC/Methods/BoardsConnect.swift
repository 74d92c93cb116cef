public import JSONRPC

extension FleetMethods {
    /// `boards.connect`.
    public enum BoardsConnect: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "boards.connect",
            summary: "Connect the selected boards and keep them connected.",
            params: [RPCParamDescriptor("select", .selection, required: true, "The boards to connect.")],
            result: boardOutcomes,
            access: .write,
            errors: boardErrors)

        public typealias Params = BoardSelectParams
        public typealias Result = FleetResult<Done>
    }
}
