public import JSONRPC

extension FleetMethods {
    /// `boards.identify`.
    public enum BoardsIdentify: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "boards.identify",
            summary: "Make the selected boards show themselves: the LED blinks for a few seconds, then is as it was wanted.",
            params: [
                RPCParamDescriptor("select", .selection, required: true, "The boards to blink."),
                timeoutMs,
            ],
            result: boardOutcomes,
            access: .write,
            errors: boardErrors)

        public struct Params: RPCMethodParams, Hashable {
            /// The boards to blink.
            public var select: Selection
            /// Time limit per board in milliseconds (the daemon has a default).
            public var timeoutMs: Int?

            public init(select: Selection, timeoutMs: Int? = nil) {
                self.select = select
                self.timeoutMs = timeoutMs
            }

            public init(checked params: RPCCheckedParams) throws(RPCError) {
                self.init(select: try params.selection("select"), timeoutMs: try params.optionalInt("timeoutMs"))
            }
        }
        public typealias Result = FleetResult<Done>
    }
}
