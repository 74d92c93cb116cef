public import JSONRPC

extension FleetMethods {
    /// `gatt.write`.
    public enum GattWrite: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "gatt.write",
            summary: "Write bytes (hex) to any GATT characteristic of the selected boards.",
            params: GattCharacteristicParams.descriptors(select: "The boards to write to (or give address).") + [
                RPCParamDescriptor("value", .hex, required: true, "The bytes to write, as hex."),
                RPCParamDescriptor("withResponse", .boolean, "Write with response (default true)."),
            ],
            exactlyOneOf: [["select", "address"]],
            result: RPCResultDescriptor(
                "outcome", "One entry per board, and totals.", schema: Schemas.fleetResult(Schemas.gattOutcome)),
            access: .write,
            errors: boardErrors)

        public struct Params: RPCMethodParams, Hashable {
            /// The boards to write to.
            public var select: Selection?
            /// One board's address.
            public var address: String?
            /// Service UUID.
            public var service: String
            /// Characteristic UUID.
            public var characteristic: String
            /// The bytes to write, as hex.
            public var value: String
            /// Write with response (default true).
            public var withResponse: Bool?

            public init(
                select: Selection? = nil, address: String? = nil, service: String, characteristic: String, value: String,
                withResponse: Bool? = nil
            ) {
                self.select = select
                self.address = address
                self.service = service
                self.characteristic = characteristic
                self.value = value
                self.withResponse = withResponse
            }

            public init(checked params: RPCCheckedParams) throws(RPCError) {
                self.init(
                    select: try params.optionalSelection("select"), address: try params.optionalString("address"),
                    service: try params.string("service"), characteristic: try params.string("characteristic"),
                    value: try params.string("value"), withResponse: try params.optionalBool("withResponse"))
            }
        }
        public typealias Result = FleetResult<GattOutcome>
    }
}
