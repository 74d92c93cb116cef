public import JSONRPC

/// Any GATT characteristic of the selected boards, by UUID: read, write, follow.
extension FleetMethods {
    /// `gatt.read`.
    public enum GattRead: RPCMethod {
        public static let descriptor = describe(
            "gatt.read", "Read any GATT characteristic of the selected boards (value as hex).",
            params: GattCharacteristicParams.notes(select: "The boards to read (or give address)."), exactlyOneOf: [["select", "address"]],
            result: RPCResultDescriptor("values", "One entry per board with the value as hex, and totals."), access: .read,
            errors: boardErrors)

        public typealias Params = GattCharacteristicParams
        public typealias Result = FleetResult<GattBytes>
    }

    /// `gatt.write`.
    public enum GattWrite: RPCMethod {
        public static let descriptor = describe(
            "gatt.write", "Write bytes (hex) to any GATT characteristic of the selected boards.",
            params: GattCharacteristicParams.notes(select: "The boards to write to (or give address).").merging([
                "value": "The bytes to write, as hex.", "withResponse": "Write with response (default true).",
            ]) { own, _ in own },
            exactlyOneOf: [["select", "address"]], result: RPCResultDescriptor("outcome", "One entry per board, and totals."),
            access: .write, errors: boardErrors)

        public struct Params: RPCMethodParams, Hashable {
            public var select: Selection?
            public var address: BoardAddress?
            public var service: String
            public var characteristic: String
            /// The bytes to write (hex on the wire).
            @Hex public var value: [UInt8]
            /// Write with response (default true).
            public var withResponse: Bool?

            public init(
                select: Selection? = nil, address: BoardAddress? = nil, service: String, characteristic: String, value: [UInt8],
                withResponse: Bool? = nil
            ) {
                (self.select, self.address, self.service, self.characteristic) = (select, address, service, characteristic)
                self.value = value
                self.withResponse = withResponse
            }

            /// The boards: the selection, or the one board of `address`.
            public var boards: Selection { Selection.boards(select, address) }
        }
        public typealias Result = FleetResult<Done>
    }

    /// `gatt.notify`: each value the board notifies arrives as a ``GattValueNotification``
    /// (method `gatt.value`) until the connection closes; the subscription survives reconnects.
    public enum GattNotify: RPCMethod {
        public static let descriptor = describe(
            "gatt.notify",
            "Receive the notifications of any GATT characteristic of the selected boards as \(GattValueNotification.method) notifications on this connection.",
            params: GattCharacteristicParams.notes(select: "The boards to listen to (or give address)."),
            exactlyOneOf: [["select", "address"]],
            result: RPCResultDescriptor("outcome", "One entry per board (ok when subscribed), and totals."), access: .read,
            errors: boardErrors + [.limitReached])

        public typealias Params = GattCharacteristicParams
        public typealias Result = FleetResult<Done>
    }
}

/// Parameters of `gatt.read` and `gatt.notify`: one characteristic of the selected boards;
/// exactly one of `select` and `address` is given.
public struct GattCharacteristicParams: RPCMethodParams, Hashable {
    /// The boards.
    public var select: Selection?
    /// One board's address.
    public var address: BoardAddress?
    /// Service UUID.
    public var service: String
    /// Characteristic UUID.
    public var characteristic: String

    public init(select: Selection? = nil, address: BoardAddress? = nil, service: String, characteristic: String) {
        (self.select, self.address, self.service, self.characteristic) = (select, address, service, characteristic)
    }

    /// The boards: the selection, or the one board of `address` (the descriptor asks for
    /// exactly one of them).
    public var boards: Selection { Selection.boards(select, address) }

    /// What these parameters are for; `select` is described as `selectDescription`.
    static func notes(select selectDescription: String) -> [String: RPCParamNote] {
        [
            "select": RPCParamNote(selectDescription), "address": "One board's address (or give select).",
            "service": RPCParamNote("Service UUID.", .uuid), "characteristic": RPCParamNote("Characteristic UUID.", .uuid),
        ]
    }
}
