public import JSONRPC

/// The methods that do one thing to the selected boards and answer one outcome per board:
/// each is its name, its sentence and what it does, in one ``boardAction``.
extension FleetMethods {
    /// A method that acts on the selected boards (`select`, what `selectHelp` says) and
    /// answers ``boardOutcomes``: a write, with the errors of board methods unless `errors`.
    static func boardAction(
        _ name: String, _ summary: String, select selectHelp: String, extra: [RPCParamDescriptor] = [],
        errors: [RPCErrorCode] = boardErrors
    ) -> RPCMethodDescriptor {
        RPCMethodDescriptor(
            name: name, summary: summary,
            params: [RPCParamDescriptor("select", .selection, required: true, selectHelp)] + extra,
            result: boardOutcomes, access: .write, errors: errors)
    }

    /// `boards.connect`.
    public enum BoardsConnect: RPCMethod {
        public static let descriptor = boardAction(
            "boards.connect", "Connect the selected boards and keep them connected.", select: "The boards to connect.")
        public typealias Params = BoardSelectParams
        public typealias Result = FleetResult<Done>
    }

    /// `boards.disconnect`.
    public enum BoardsDisconnect: RPCMethod {
        public static let descriptor = boardAction(
            "boards.disconnect", "Disconnect the selected boards and stop reconnecting them.",
            select: "The boards to disconnect.")
        public typealias Params = BoardSelectParams
        public typealias Result = FleetResult<Done>
    }

    /// `boards.forget`.
    public enum BoardsForget: RPCMethod {
        public static let descriptor = boardAction(
            "boards.forget", "Disconnect the selected boards and remove them from the daemon and BlueZ.",
            select: "The boards to forget.", errors: [.permissionDenied, .boardNotFound, .bluezUnavailable, .busy])
        public typealias Params = BoardSelectParams
        public typealias Result = FleetResult<Done>
    }

    /// `boards.identify`.
    public enum BoardsIdentify: RPCMethod {
        public static let descriptor = boardAction(
            "boards.identify",
            "Make the selected boards show themselves: the LED blinks for a few seconds, then is as it was wanted.",
            select: "The boards to blink.", extra: [timeoutMs])
        public typealias Params = BoardSelectParams
        public typealias Result = FleetResult<Done>
    }
}

/// Params of the ``FleetMethods/boardAction(_:_:select:extra:errors:)`` methods: the boards,
/// and a time limit per board where the method takes one.
public struct BoardSelectParams: RPCMethodParams, Codable, Hashable {
    /// The boards to act on.
    public var select: Selection
    /// Time limit per board in milliseconds (the daemon has a default; `boards.identify`).
    public var timeoutMs: Int?

    public init(select: Selection, timeoutMs: Int? = nil) {
        self.select = select
        self.timeoutMs = timeoutMs
    }
}
