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
                RPCParamDescriptor(
                    "maxAgeMs", .integer(minimum: 0, maximum: 86_400_000),
                    "Return a held reading at most this old instead of reading the board."),
                RPCParamDescriptor("timeoutMs", .integer(minimum: 1, maximum: 600_000), "Time limit per board, ms."),
            ],
            result: RPCResultDescriptor(
                "readings", "One entry per selected board with value, unit and ageMs, and totals.",
                schema: Schemas.fleetResult(Schemas.sensorOutcome)),
            access: .read,
            errors: boardErrors + [.invalidParams])

        public struct Params: RPCMethodParams, Hashable {
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

            public init(checked params: RPCCheckedParams) throws(RPCError) {
                self.init(
                    select: try params.selection("select"), sensor: try params.string("sensor"),
                    maxAgeMs: try params.optionalInt("maxAgeMs"), timeoutMs: try params.optionalInt("timeoutMs"))
            }
        }
        public typealias Result = FleetResult<SensorValue>
    }

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
                RPCParamDescriptor("timeoutMs", .integer(minimum: 1, maximum: 600_000), "Time limit per board, ms."),
            ],
            result: boardOutcomes,
            access: .write,
            errors: boardErrors + [.invalidParams])

        public struct Params: RPCMethodParams, Hashable {
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

            public init(checked params: RPCCheckedParams) throws(RPCError) {
                self.init(
                    select: try params.selection("select"), switch: try params.string("switch"), on: try params.bool("on"),
                    timeoutMs: try params.optionalInt("timeoutMs"))
            }
        }
        public typealias Result = FleetResult<Done>
    }
}
