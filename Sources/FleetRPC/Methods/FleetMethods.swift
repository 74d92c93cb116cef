/// The daemon's method catalogue: the fixed names and contracts scripts rely on.
/// The server registers a handler for each; `rpc.discover` publishes them.
public enum FleetMethods {
    public static let ledSet = RPCMethodDescriptor(
        name: "led.set",
        summary: "Switch the LED of the selected boards on or off.",
        params: [
            RPCParamDescriptor("select", .selection, required: true, "The boards to switch."),
            RPCParamDescriptor("on", .boolean, required: true, "true switches the LED on, false off."),
            RPCParamDescriptor("timeoutMs", .integer(minimum: 1, maximum: 600_000), "Time limit per board, ms."),
        ],
        result: RPCResultDescriptor("outcome", "One entry per selected board, and totals.", schema: Schemas.fleetResult(Schemas.boardOutcome)),
        access: .write,
        errors: [.permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .busy])

    public static let temperatureRead = RPCMethodDescriptor(
        name: "temperature.read",
        summary: "Read the temperature of the selected boards (signed whole degrees Celsius).",
        params: [
            RPCParamDescriptor("select", .selection, required: true, "The boards to read."),
            RPCParamDescriptor(
                "maxAgeMs", .integer(minimum: 0, maximum: 86_400_000),
                "Return a held reading at most this old instead of reading the board."),
            RPCParamDescriptor("timeoutMs", .integer(minimum: 1, maximum: 600_000), "Time limit per board, ms."),
        ],
        result: RPCResultDescriptor(
            "readings", "One entry per selected board with celsius and ageMs, and totals.",
            schema: Schemas.fleetResult(Schemas.temperatureOutcome)),
        access: .read,
        errors: [.permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .busy])

    public static let boardsList = RPCMethodDescriptor(
        name: "boards.list",
        summary: "List the known boards with their state, LED and latest temperature.",
        params: [RPCParamDescriptor("select", .selection, "Only these boards (default all).")],
        result: RPCResultDescriptor("boards", "The boards, sorted by address.", schema: Schemas.boardList),
        access: .read,
        errors: [.permissionDenied])

    public static let boardsScan = RPCMethodDescriptor(
        name: "boards.scan",
        summary: "Scan for boards for a number of seconds and return every board seen.",
        params: [RPCParamDescriptor("seconds", .number(minimum: 0.1, maximum: 300), required: true, "How long to scan.")],
        result: RPCResultDescriptor("boards", "The boards seen, sorted by address.", schema: Schemas.boardList),
        access: .write,
        errors: [.permissionDenied, .adapterUnavailable, .bluezUnavailable, .busy, .timeout])

    public static let boardsConnect = RPCMethodDescriptor(
        name: "boards.connect",
        summary: "Connect the selected boards and keep them connected.",
        params: [RPCParamDescriptor("select", .selection, required: true, "The boards to connect.")],
        result: RPCResultDescriptor("outcome", "One entry per selected board, and totals.", schema: Schemas.fleetResult(Schemas.boardOutcome)),
        access: .write,
        errors: [.permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .busy])

    public static let boardsDisconnect = RPCMethodDescriptor(
        name: "boards.disconnect",
        summary: "Disconnect the selected boards and stop reconnecting them.",
        params: [RPCParamDescriptor("select", .selection, required: true, "The boards to disconnect.")],
        result: RPCResultDescriptor("outcome", "One entry per selected board, and totals.", schema: Schemas.fleetResult(Schemas.boardOutcome)),
        access: .write,
        errors: [.permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .busy])

    public static let boardsForget = RPCMethodDescriptor(
        name: "boards.forget",
        summary: "Disconnect the selected boards and remove them from the daemon and BlueZ.",
        params: [RPCParamDescriptor("select", .selection, required: true, "The boards to forget.")],
        result: RPCResultDescriptor("outcome", "One entry per selected board, and totals.", schema: Schemas.fleetResult(Schemas.boardOutcome)),
        access: .write,
        errors: [.permissionDenied, .boardNotFound, .bluezUnavailable, .busy])

    public static let boardsAlias = RPCMethodDescriptor(
        name: "boards.alias",
        summary: "Give a board an alias that selections can use; an empty alias removes it.",
        params: [
            RPCParamDescriptor("address", .address, required: true, "The board's Bluetooth address."),
            RPCParamDescriptor("alias", .string(), required: true, "The alias; empty removes it."),
        ],
        result: RPCResultDescriptor("board", "The board after the change.", schema: Schemas.boardInfo),
        access: .write,
        errors: [.permissionDenied, .boardNotFound])

    public static let gattRead = RPCMethodDescriptor(
        name: "gatt.read",
        summary: "Read any GATT characteristic of the selected boards (value as hex).",
        params: [
            RPCParamDescriptor("select", .selection, "The boards to read (or give address)."),
            RPCParamDescriptor("address", .address, "One board's address (or give select)."),
            RPCParamDescriptor("service", .uuid, required: true, "Service UUID."),
            RPCParamDescriptor("characteristic", .uuid, required: true, "Characteristic UUID."),
        ],
        exactlyOneOf: [["select", "address"]],
        result: RPCResultDescriptor("values", "One entry per board with the value as hex, and totals.", schema: Schemas.fleetResult(Schemas.gattOutcome)),
        access: .read,
        errors: [.permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .busy])

    public static let gattWrite = RPCMethodDescriptor(
        name: "gatt.write",
        summary: "Write bytes (hex) to any GATT characteristic of the selected boards.",
        params: [
            RPCParamDescriptor("select", .selection, "The boards to write to (or give address)."),
            RPCParamDescriptor("address", .address, "One board's address (or give select)."),
            RPCParamDescriptor("service", .uuid, required: true, "Service UUID."),
            RPCParamDescriptor("characteristic", .uuid, required: true, "Characteristic UUID."),
            RPCParamDescriptor("value", .hex, required: true, "The bytes to write, as hex."),
            RPCParamDescriptor("withResponse", .boolean, "Write with response (default true)."),
        ],
        exactlyOneOf: [["select", "address"]],
        result: RPCResultDescriptor("outcome", "One entry per board, and totals.", schema: Schemas.fleetResult(Schemas.gattOutcome)),
        access: .write,
        errors: [.permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .busy])

    public static let eventsSubscribe = RPCMethodDescriptor(
        name: "events.subscribe",
        summary: "Receive events as \(EventNotification.method) notifications on this connection.",
        params: [
            RPCParamDescriptor(
                "topics", .array(of: .string(allowed: EventTopic.allCases.map(\.rawValue))), "Topics (default all).")
        ],
        result: RPCResultDescriptor("subscription", "The topics this connection now receives.", schema: Schemas.topics),
        access: .read,
        errors: [.permissionDenied])

    public static let eventsUnsubscribe = RPCMethodDescriptor(
        name: "events.unsubscribe",
        summary: "Stop receiving events on this connection (the given topics, or all).",
        params: [
            RPCParamDescriptor(
                "topics", .array(of: .string(allowed: EventTopic.allCases.map(\.rawValue))), "Topics (default all).")
        ],
        result: RPCResultDescriptor("subscription", "The topics this connection still receives.", schema: Schemas.topics),
        access: .read,
        errors: [.permissionDenied])

    public static let daemonStatus = RPCMethodDescriptor(
        name: "daemon.status",
        summary: "The daemon's version, uptime, adapter and BlueZ state, and board counts.",
        result: RPCResultDescriptor("status", "The daemon's status.", schema: Schemas.daemonStatus),
        access: .read,
        errors: [.permissionDenied])

    /// Every fleet method, in the order `rpc.discover` lists them.
    public static let all: [RPCMethodDescriptor] = [
        boardsList, boardsScan, boardsConnect, boardsDisconnect, boardsForget, boardsAlias,
        ledSet, temperatureRead, gattRead, gattWrite, gattNotify, eventsSubscribe, eventsUnsubscribe, daemonStatus,
    ]

    /// The built-in `rpc.discover`: the OpenRPC document of the methods served.
    public static let rpcDiscover = RPCMethodDescriptor(
        name: "rpc.discover",
        summary: "The OpenRPC 1.2.6 document describing every method.",
        result: RPCResultDescriptor("openrpc", "An OpenRPC 1.2.6 document.", schema: ["type": "object"]),
        access: .read,
        errors: [.permissionDenied])
}

/// JSON Schemas of the result types, for the OpenRPC document.
enum Schemas {
    static let boardError: JSONValue = [
        "type": "object", "required": ["code", "message", "retryable"],
        "properties": [
            "code": ["type": "string", "enum": .array(BoardErrorCode.allCases.map { .string($0.rawValue) })],
            "message": ["type": "string"], "retryable": ["type": "boolean"],
        ],
    ]
    static let temperature: JSONValue = [
        "type": "object", "required": ["celsius", "ageMs"],
        "properties": ["celsius": ["type": "integer"], "ageMs": ["type": "integer"]],
    ]
    static let boardInfo: JSONValue = [
        "type": "object", "required": ["address", "name", "state"],
        "properties": [
            "address": ["type": "string"], "name": ["type": "string"], "alias": ["type": "string"],
            "state": ["type": "string", "enum": .array(BoardState.allCases.map { .string($0.rawValue) })],
            "rssi": ["type": "integer"], "led": ["type": ["boolean", "null"]],
            "desiredLed": ["type": ["boolean", "null"]], "temperature": temperature, "adapter": ["type": "string"],
            "lastSeen": ["type": "string", "format": "date-time"],
        ],
    ]
    static let boardList: JSONValue = [
        "type": "object", "required": ["boards"], "properties": ["boards": ["type": "array", "items": boardInfo]],
    ]
    static let boardOutcome: JSONValue = outcome([:])
    static let temperatureOutcome: JSONValue = outcome(["celsius": ["type": "integer"], "ageMs": ["type": "integer"]])
    static let gattOutcome: JSONValue = outcome(["value": ["type": "string", "pattern": "^([0-9a-f]{2})*$"]])
    static let topics: JSONValue = [
        "type": "object", "required": ["topics"],
        "properties": [
            "topics": ["type": "array", "items": ["type": "string", "enum": .array(EventTopic.allCases.map { .string($0.rawValue) })]]
        ],
    ]
    static let daemonStatus: JSONValue = [
        "type": "object",
        "required": ["version", "uptimeSeconds", "bluez", "powered", "discovering", "boards", "clients"],
        "properties": [
            "version": ["type": "string"], "uptimeSeconds": ["type": "number"], "bluez": ["type": "boolean"],
            "adapter": ["type": "string"], "powered": ["type": "boolean"], "discovering": ["type": "boolean"],
            "adapters": [
                "type": "array",
                "items": [
                    "type": "object",
                    "required": ["name", "present", "powered", "discovering", "slotsUsed", "slotsLimit", "boards"],
                    "properties": [
                        "name": ["type": "string"], "address": ["type": "string"], "present": ["type": "boolean"],
                        "powered": ["type": "boolean"], "discovering": ["type": "boolean"],
                        "slotsUsed": ["type": "integer"], "slotsLimit": ["type": "integer"],
                        "boards": ["type": "array", "items": ["type": "string"]],
                    ],
                ],
            ],
            "boards": [
                "type": "object",
                "properties": ["known": ["type": "integer"], "connected": ["type": "integer"], "ready": ["type": "integer"]],
            ],
            "clients": ["type": "integer"],
            "mqtt": [
                "type": "object",
                "required": ["broker", "gateway", "connected", "queued", "dropped"],
                "properties": [
                    "broker": ["type": "string"], "gateway": ["type": "string"], "connected": ["type": "boolean"],
                    "queued": ["type": "integer"], "dropped": ["type": "integer"],
                ],
            ],
        ],
    ]

    static func outcome(_ extra: [String: JSONValue]) -> JSONValue {
        var properties: [String: JSONValue] = [
            "address": ["type": "string"], "name": ["type": "string"], "ok": ["type": "boolean"],
            "error": boardError, "latencyMs": ["type": "integer"], "pending": ["type": "boolean"],
        ]
        properties.merge(extra) { _, new in new }
        return ["type": "object", "required": ["address", "name", "ok", "latencyMs"], "properties": .object(properties)]
    }

    static func fleetResult(_ entry: JSONValue) -> JSONValue {
        [
            "type": "object", "required": ["results", "totals"],
            "properties": [
                "results": ["type": "array", "items": entry],
                "totals": [
                    "type": "object", "required": ["ok", "failed"],
                    "properties": ["ok": ["type": "integer"], "failed": ["type": "integer"]],
                ],
            ],
        ]
    }
}
