public import JSONRPC

/// The methods that do one thing to the selected boards and answer one outcome per board:
/// each is its name, its sentence and what it does, in one ``boardAction``.
extension RPCMethod where Result == FleetResult<Done> {
    /// A method that acts on the selected boards (`select`, what `selectHelp` says) and
    /// answers ``FleetMethods/boardOutcomes``: a write, with the errors of board methods unless `errors`.
    static func boardAction(
        _ name: String, _ summary: String, select selectHelp: String, params notes: [String: RPCParamNote] = [:],
        errors: [RPCErrorCode] = FleetMethods.boardErrors
    ) -> RPCMethodDescriptor {
        describe(
            name, summary, params: notes.merging(["select": RPCParamNote(selectHelp)]) { own, _ in own },
            result: FleetMethods.boardOutcomes, access: .write, errors: errors)
    }
}

extension FleetMethods {
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
            select: "The boards to blink.", params: ["timeoutMs": timeoutMs])
        public typealias Params = BoardsTimedParams
        public typealias Result = FleetResult<Done>
    }

    /// `led.set`.
    public enum LedSet: RPCMethod {
        public static let descriptor = boardAction(
            "led.set", "Switch the LED of the selected boards on or off.", select: "The boards to switch.",
            params: ["on": "true switches the LED on, false off.", "timeoutMs": timeoutMs])

        public struct Params: RPCMethodParams, Hashable {
            public var select: Selection
            /// `true` switches the LED on, `false` off.
            public var on: Bool
            /// Time limit per board in milliseconds (the daemon has a default).
            public var timeoutMs: Int?

            public init(select: Selection, on: Bool, timeoutMs: Int? = nil) {
                (self.select, self.on, self.timeoutMs) = (select, on, timeoutMs)
            }
        }
        public typealias Result = FleetResult<Done>
    }

    /// `switch.set`: any switch of the boards' profiles (`led.set` is this for the built-in
    /// switch `led`).
    public enum SwitchSet: RPCMethod {
        public static let descriptor = boardAction(
            "switch.set", "Switch a switch of the selected boards (as their profile declares it) on or off.",
            select: "The boards to switch.",
            params: [
                "switch": "The switch's name in the boards' profile, like led.", "on": "true switches it on, false off.",
                "timeoutMs": timeoutMs,
            ],
            errors: boardErrors + [.invalidParams])

        public struct Params: RPCMethodParams, Hashable {
            public var select: Selection
            public var `switch`: String
            public var on: Bool
            public var timeoutMs: Int?

            public init(select: Selection, switch name: String, on: Bool, timeoutMs: Int? = nil) {
                (self.select, self.switch, self.on, self.timeoutMs) = (select, name, on, timeoutMs)
            }
        }
        public typealias Result = FleetResult<Done>
    }
}

/// Params of the board actions that take only the boards.
public struct BoardSelectParams: RPCMethodParams, Hashable {
    /// The boards to act on.
    public var select: Selection

    public init(select: Selection) { self.select = select }
}

/// Params of a board action that takes the boards and a time limit per board.
public struct BoardsTimedParams: RPCMethodParams, Hashable {
    public var select: Selection
    /// Time limit per board in milliseconds (the daemon has a default).
    public var timeoutMs: Int?

    public init(select: Selection, timeoutMs: Int? = nil) { (self.select, self.timeoutMs) = (select, timeoutMs) }
}
