public import JSONRPC

extension FleetMethods {
    /// `sensor.read`: any sensor of the boards' profiles (`temperature.read` is this for the
    /// built-in sensor `temperature`, in whole degrees).
    public enum SensorRead: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "sensor.read",
            summary: "Read a sensor of the selected boards, as their profile declares it (value scaled, with its unit).",
            params: [
                RPCParamDescriptor("select", .selection, required: true, "The boards to read."),
                RPCParamDescriptor("sensor", .string(), required: true, "The sensor's name in the boards' profile, like temperature or humidity."),
                maxAgeMs,
                timeoutMs,
            ],
            result: RPCResultDescriptor(
                "readings", "One entry per selected board with value, unit and ageMs, and totals.",
                schema: Schemas.fleetResult(Schemas.sensorOutcome)),
            access: .read,
            errors: boardErrors + [.invalidParams])

        public struct Params: RPCMethodParams, Codable, Hashable {
            public var select: Selection
            public var sensor: String
            public var maxAgeMs: Int?
            public var timeoutMs: Int?

            public init(select: Selection, sensor: String, maxAgeMs: Int? = nil, timeoutMs: Int? = nil) {
                self.select = select
                self.sensor = sensor
                self.maxAgeMs = maxAgeMs
                self.timeoutMs = timeoutMs
            }
        }
        public typealias Result = FleetResult<SensorValue>
    }
}
