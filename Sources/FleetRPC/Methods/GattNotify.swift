public import JSONRPC

extension FleetMethods {
    /// `gatt.notify`: each value the board notifies arrives as a ``GattValueNotification``
    /// (method `gatt.value`) until the connection closes; the subscription survives reconnects.
    public enum GattNotify: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "gatt.notify",
            summary:
                "Receive the notifications of any GATT characteristic of the selected boards as \(GattValueNotification.method) notifications on this connection.",
            params: GattCharacteristicParams.descriptors(select: "The boards to listen to (or give address)."),
            exactlyOneOf: [["select", "address"]],
            result: RPCResultDescriptor(
                "outcome", "One entry per board (ok when subscribed), and totals.",
                schema: Schemas.fleetResult(Schemas.boardOutcome)),
            access: .read,
            errors: boardErrors + [.limitReached])

        public typealias Params = GattCharacteristicParams
        public typealias Result = FleetResult<Done>
    }
}
