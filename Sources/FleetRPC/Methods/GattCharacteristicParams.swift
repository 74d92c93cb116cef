/// Parameters of `gatt.read` and `gatt.notify`: one characteristic of the selected boards;
/// exactly one of `select` and `address` is given.
public import JSONRPC

public struct GattCharacteristicParams: RPCMethodParams, Codable, Hashable {
    /// The boards.
    public var select: Selection?
    /// One board's address.
    public var address: BoardAddress?
    /// Service UUID.
    public var service: String
    /// Characteristic UUID.
    public var characteristic: String

    public init(select: Selection? = nil, address: BoardAddress? = nil, service: String, characteristic: String) {
        self.select = select
        self.address = address
        self.service = service
        self.characteristic = characteristic
    }

    /// The boards: the selection, or the one board of `address` (the descriptor asks for
    /// exactly one of them).
    public var boards: Selection { Selection.boards(select, address) }

    /// The descriptors of these parameters; `select` is described as `selectDescription`.
    static func descriptors(select selectDescription: String) -> [RPCParamDescriptor] {
        [
            RPCParamDescriptor("select", .selection, selectDescription),
            RPCParamDescriptor("address", .address, "One board's address (or give select)."),
            RPCParamDescriptor("service", .uuid, required: true, "Service UUID."),
            RPCParamDescriptor("characteristic", .uuid, required: true, "Characteristic UUID."),
        ]
    }
}
