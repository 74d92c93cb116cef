public import JSONRPC

extension FleetMethods {
    /// `boards.forget`.
    public enum BoardsForget: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "boards.forget",
            summary: "Disconnect the selected boards and remove them from the daemon and BlueZ.",
            params: [RPCParamDescriptor("select", .selection, required: true, "The boards to forget.")],
            result: boardOutcomes,
            access: .write,
            errors: [.permissionDenied, .boardNotFound, .bluezUnavailable, .busy])

        public typealias Params = BoardSelectParams
        public typealias Result = FleetResult<Done>
    }
}
