public import JSONRPC

extension FleetMethods {
    /// `led.set`.
    public enum LedSet: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "led.set",
            summary: "Switch the LED of the selected boards on or off.",
            params: [
                RPCParamDescriptor("select", .selection, required: true, "The boards to switch."),
                RPCParamDescriptor("on", .boolean, required: true, "true switches the LED on, false off."),
                timeoutMs,
            ],
            result: boardOutcomes,
            access: .write,
            errors: boardErrors)

        public struct Params: RPCMethodParams, Codable, Hashable {
            /// The boards to switch.
            public var select: Selection
            /// `true` switches the LED on, `false` off.
            public var on: Bool
            /// Time limit per board in milliseconds (the daemon has a default).
            public var timeoutMs: Int?

            public init(select: Selection, on: Bool, timeoutMs: Int? = nil) {
                self.select = select
                self.on = on
                self.timeoutMs = timeoutMs
            }
        }
        public typealias Result = FleetResult<Done>
    }
}
