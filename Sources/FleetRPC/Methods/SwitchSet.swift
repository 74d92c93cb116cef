public import JSONRPC

extension FleetMethods {
    /// `switch.set`: any switch of the boards' profiles (`led.set` is this for the built-in
    /// switch `led`).
    public enum SwitchSet: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "switch.set",
            summary: "Switch a switch of the selected boards (as their profile declares it) on or off.",
            params: [
                RPCParamDescriptor("select", .selection, required: true, "The boards to switch."),
                RPCParamDescriptor("switch", .string(), required: true, "The switch's name in the boards' profile, like led."),
                RPCParamDescriptor("on", .boolean, required: true, "true switches it on, false off."),
                timeoutMs,
            ],
            result: boardOutcomes,
            access: .write,
            errors: boardErrors + [.invalidParams])

        public struct Params: RPCMethodParams, Codable, Hashable {
            public var select: Selection
            public var `switch`: String
            public var on: Bool
            public var timeoutMs: Int?

            public init(select: Selection, switch name: String, on: Bool, timeoutMs: Int? = nil) {
                self.select = select
                self.switch = name
                self.on = on
                self.timeoutMs = timeoutMs
            }
        }
        public typealias Result = FleetResult<Done>
    }
}
