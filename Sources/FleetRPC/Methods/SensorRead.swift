public import JSONRPC

extension FleetMethods {
    /// `temperature.read`.
    public enum TemperatureRead: RPCMethod {
        public static let descriptor = describe(
            "temperature.read", "Read the temperature of the selected boards (signed whole degrees Celsius).",
            params: ["select": "The boards to read.", "maxAgeMs": maxAgeMs, "timeoutMs": timeoutMs],
            result: RPCResultDescriptor("readings", "One entry per selected board with celsius and ageMs, and totals."),
            access: .read, errors: boardErrors)

        public struct Params: RPCMethodParams, Hashable {
            /// The boards to read.
            public var select: Selection
            /// A held reading at most this old is returned without reading the board again.
            public var maxAgeMs: Int?
            /// Time limit per board in milliseconds.
            public var timeoutMs: Int?

            public init(select: Selection, maxAgeMs: Int? = nil, timeoutMs: Int? = nil) {
                (self.select, self.maxAgeMs, self.timeoutMs) = (select, maxAgeMs, timeoutMs)
            }
        }
        public typealias Result = FleetResult<TemperatureReading>
    }

    /// `sensor.read`: any sensor of the boards' profiles (`temperature.read` is this for the
    /// built-in sensor `temperature`, in whole degrees).
    public enum SensorRead: RPCMethod {
        public static let descriptor = describe(
            "sensor.read", "Read a sensor of the selected boards, as their profile declares it (value scaled, with its unit).",
            params: [
                "select": "The boards to read.", "sensor": "The sensor's name in the boards' profile, like temperature or humidity.",
                "maxAgeMs": maxAgeMs, "timeoutMs": timeoutMs,
            ],
            result: RPCResultDescriptor("readings", "One entry per selected board with value, unit and ageMs, and totals."),
            access: .read, errors: boardErrors + [.invalidParams])

        public struct Params: RPCMethodParams, Hashable {
            public var select: Selection
            public var sensor: String
            public var maxAgeMs: Int?
            public var timeoutMs: Int?

            public init(select: Selection, sensor: String, maxAgeMs: Int? = nil, timeoutMs: Int? = nil) {
                (self.select, self.sensor, self.maxAgeMs, self.timeoutMs) = (select, sensor, maxAgeMs, timeoutMs)
            }
        }
        public typealias Result = FleetResult<SensorValue>
    }
}
