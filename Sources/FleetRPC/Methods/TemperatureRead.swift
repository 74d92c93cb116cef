public import JSONRPC

extension FleetMethods {
    /// `temperature.read`.
    public enum TemperatureRead: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "temperature.read",
            summary: "Read the temperature of the selected boards (signed whole degrees Celsius).",
            params: [
                RPCParamDescriptor("select", .selection, required: true, "The boards to read."),
                maxAgeMs,
                timeoutMs,
            ],
            result: RPCResultDescriptor(
                "readings", "One entry per selected board with celsius and ageMs, and totals.",
                schema: Schemas.fleetResult(Schemas.temperatureOutcome)),
            access: .read,
            errors: boardErrors)

        public struct Params: RPCMethodParams, Codable, Hashable {
            /// The boards to read.
            public var select: Selection
            /// A held reading at most this old is returned without reading the board again.
            public var maxAgeMs: Int?
            /// Time limit per board in milliseconds.
            public var timeoutMs: Int?

            public init(select: Selection, maxAgeMs: Int? = nil, timeoutMs: Int? = nil) {
                self.select = select
                self.maxAgeMs = maxAgeMs
                self.timeoutMs = timeoutMs
            }
        }
        public typealias Result = FleetResult<TemperatureReading>
    }
}
