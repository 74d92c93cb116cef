public import JSONRPC

extension FleetMethods {
    /// `gatt.read`.
    public enum GattRead: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "gatt.read",
            summary: "Read any GATT characteristic of the selected boards (value as hex).",
            params: GattCharacteristicParams.descriptors(select: "The boards to read (or give address)."),
            exactlyOneOf: [["select", "address"]],
            result: RPCResultDescriptor(
                "values", "One entry per board with the value as hex, and totals.", schema: Schemas.fleetResult(Schemas.gattOutcome)),
            access: .read,
            errors: boardErrors)

        public typealias Params = GattCharacteristicParams
        public typealias Result = FleetResult<GattBytes>
    }
}
