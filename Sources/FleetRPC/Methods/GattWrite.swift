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
                "outcome", "One entry per board, and totals.", schema: Schemas.fleetResult(Schemas.boardOutcome)),
            access: .write,
            errors: boardErrors)

        public struct Params: RPCMethodParams, Hashable {
            /// The boards to write to.
            public var select: Selection?
            /// One board's address.
            public var address: BoardAddress?
            /// Service UUID.
            public var service: String
            /// Characteristic UUID.
            public var characteristic: String
            /// The bytes to write (hex on the wire).
            public var value: [UInt8]
            /// Write with response (default true).
            public var withResponse: Bool?

            public init(
                select: Selection? = nil, address: BoardAddress? = nil, service: String, characteristic: String, value: [UInt8],
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
                    select: try params.optionalSelection("select"), address: try params.typed("address", as: BoardAddress.self),
                    service: try params.string("service"), characteristic: try params.string("characteristic"),
                    value: try params.typed("value", as: [UInt8].self) ?? [], withResponse: try params.optionalBool("withResponse"))
            }

            /// The boards: the selection, or the one board of `address`.
            public var boards: Selection { Selection.boards(select, address) }

            enum CodingKeys: String, CodingKey { case select, address, service, characteristic, value, withResponse }

            public func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encodeIfPresent(select, forKey: .select)
                try container.encodeIfPresent(address, forKey: .address)
                try container.encode(service, forKey: .service)
                try container.encode(characteristic, forKey: .characteristic)
                try container.encode(HexBytes.encode(value), forKey: .value)
                try container.encodeIfPresent(withResponse, forKey: .withResponse)
            }
        }
        public typealias Result = FleetResult<Done>
    }
}
