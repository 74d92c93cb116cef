/// The daemon's method catalogue: the fixed names and contracts scripts rely on. Each
/// method is one description in this folder: its name, its sentence, its access and errors,
/// what each parameter is for, and its params and result as Swift types, from which its
/// parameters, their checks and its result's schema are read (``RPCMethod/describe(_:_:params:exactlyOneOf:result:access:errors:)``).
/// The server binds a handler to each in `FleetMethodBindings`; `rpc.discover` publishes them.
public import JSONRPC

public enum FleetMethods {
    /// Every fleet method (the daemon's `rpc.discover` lists them in the order their
    /// handlers are bound).
    public static let all: [any RPCMethod.Type] = [
        BoardsList.self, BoardsScan.self, BoardsConnect.self, BoardsDisconnect.self, BoardsForget.self,
        BoardsAlias.self, BoardsIdentify.self, LedSet.self, TemperatureRead.self, SwitchSet.self, SensorRead.self, GattRead.self, GattWrite.self, GattNotify.self,
        EventsSubscribe.self, EventsUnsubscribe.self, DaemonStatus.self, HistoryRead.self,
        DevicesWatch.self, DevicesUnwatch.self, DevicesConnected.self, DeviceConnect.self, DeviceDisconnect.self,
        DeviceServices.self,
        DeviceRead.self, DeviceWrite.self, DeviceNotify.self, DevicePair.self, DeviceUnpair.self,
    ]

    /// The errors of a method that works on boards.
    static let boardErrors: [RPCErrorCode] = [.permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .busy]

    /// `timeoutMs`: the time limit per board of a method that works on boards.
    static let timeoutMs = RPCParamNote("Time limit per board, ms.", .integer(minimum: 1, maximum: 600_000))

    /// `maxAgeMs`: how old a held reading may be to be returned without reading the board.
    static let maxAgeMs = RPCParamNote(
        "Return a held reading at most this old instead of reading the board.", .integer(minimum: 0, maximum: 86_400_000))

    /// The result of a method that acts on the selected boards.
    static let boardOutcomes = RPCResultDescriptor("outcome", "One entry per selected board, and totals.")

    /// Every notification the daemon sends, each its params' type (named by its `method`).
    public static let notifications: [any FleetNotification.Type] = [
        EventNotification.self, GattValueNotification.self, DeviceAdvertisementNotification.self, DeviceRemovedNotification.self,
        DeviceValueNotification.self, DeviceDisconnectedNotification.self, DevicePairingNotification.self,
    ]

    /// The descriptors of ``all``, in the same order.
    public static var descriptors: [RPCMethodDescriptor] { all.map { $0.descriptor } }

    /// `rpc.discover`: the OpenRPC document of the methods served.
    public enum Discover: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "rpc.discover",
            summary: "The OpenRPC 1.2.6 document describing every method.",
            result: RPCResultDescriptor("openrpc", "An OpenRPC 1.2.6 document.", schema: ["type": "object"]),
            access: .read,
            errors: [.permissionDenied])

        public typealias Result = JSONValue
    }
}

/// The params of a notification the daemon sends, under the method name ``method``: one
/// declaration, which the daemon writes and clients decode.
public protocol FleetNotification: Codable, Sendable {
    static var method: String { get }
}
