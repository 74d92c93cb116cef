extension FleetMethods {
    /// Subscribe this connection to notifications of any characteristic. Each value the
    /// board notifies arrives as a ``GattValueNotification`` (method `gatt.value`) until the
    /// connection closes or the board's link drops.
    public static let gattNotify = RPCMethodDescriptor(
        name: "gatt.notify",
        summary: "Receive the notifications of any GATT characteristic of the selected boards as \(GattValueNotification.method) notifications on this connection.",
        params: [
            RPCParamDescriptor("select", .selection, "The boards to listen to (or give address)."),
            RPCParamDescriptor("address", .address, "One board's address (or give select)."),
            RPCParamDescriptor("service", .uuid, required: true, "Service UUID."),
            RPCParamDescriptor("characteristic", .uuid, required: true, "Characteristic UUID."),
        ],
        exactlyOneOf: [["select", "address"]],
        result: RPCResultDescriptor(
            "outcome", "One entry per board (ok when subscribed), and totals.", schema: Schemas.fleetResult(Schemas.gattOutcome)),
        access: .read,
        errors: [.permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .busy])
}
