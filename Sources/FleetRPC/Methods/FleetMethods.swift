/// The daemon's method catalogue: the fixed names and contracts scripts rely on. Each
/// method is one file of this folder (descriptor, params, result); the server binds a
/// handler to each in `FleetMethodBindings`; `rpc.discover` publishes them.
public import JSONRPC

public enum FleetMethods {
    /// Every fleet method, in the order `rpc.discover` lists them.
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
    static let timeoutMs = RPCParamDescriptor("timeoutMs", .integer(minimum: 1, maximum: 600_000), "Time limit per board, ms.")

    /// `maxAgeMs`: how old a held reading may be to be returned without reading the board.
    static let maxAgeMs = RPCParamDescriptor(
        "maxAgeMs", .integer(minimum: 0, maximum: 86_400_000), "Return a held reading at most this old instead of reading the board.")

    /// The result of a method that acts on the selected boards.
    static let boardOutcomes = RPCResultDescriptor(
        "outcome", "One entry per selected board, and totals.", schema: Schemas.fleetResult(Schemas.boardOutcome))

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

/// JSON Schemas of the result types, for the OpenRPC document. Each is held to its type by
/// `ResultSchemaTests`: what the type writes is valid here, and what is declared here the
/// type writes.
enum Schemas {
    static let boardError: JSONValue = [
        "type": "object", "required": ["code", "message", "retryable"],
        "properties": [
            "code": ["type": "string", "enum": .array(FleetErrorCode.allCases.map { .string($0.rawValue) })],
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
            "state": ["type": "string", "enum": .array(BoardPhase.allCases.map { .string($0.rawValue) })],
            "rssi": ["type": "integer"], "led": ["type": ["boolean", "null"]],
            "desiredLed": ["type": ["boolean", "null"]], "temperature": temperature, "adapter": ["type": "string"],
            "lastSeen": ["type": "string", "format": "date-time"], "profile": ["type": "string"],
            "sensors": ["type": "object", "additionalProperties": sensorInfo],
        ],
    ]
    static let sensorInfo: JSONValue = [
        "type": "object",
        "properties": [
            "value": ["type": "number"], "unit": ["type": "string"], "ageMs": ["type": "integer"],
            "deviceClass": ["type": "string"],
        ],
    ]
    static let sensorOutcome: JSONValue = outcome([
        "sensor": ["type": "string"], "value": ["type": "number"], "unit": ["type": "string"], "ageMs": ["type": "integer"],
    ])
    static let boardList: JSONValue = [
        "type": "object", "required": ["boards"], "properties": ["boards": ["type": "array", "items": boardInfo]],
    ]
    static let boardOutcome: JSONValue = outcome([:])
    static let temperatureOutcome: JSONValue = outcome(["celsius": ["type": "integer"], "ageMs": ["type": "integer"]])
    static let gattOutcome: JSONValue = outcome(["value": ["type": "string", "pattern": "^([0-9a-f]{2})*$"]])
    static let topics: JSONValue = [
        "type": "object", "required": ["topics"],
        "properties": [
            "topics": [
                "type": "array", "items": ["type": "string", "enum": .array(EventTopic.allCases.map { .string($0.rawValue) })],
            ]
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
                        "health": ["type": "string", "enum": .array(AdapterCondition.allCases.map { .string($0.rawValue) })],
                        "lastRecovery": [
                            "type": "object", "required": ["symptom", "step", "started"],
                            "properties": [
                                "symptom": ["type": "string", "enum": .array(AdapterSymptom.allCases.map { .string($0.rawValue) })],
                                "step": ["type": "string", "enum": .array(RecoveryStep.allCases.map { .string($0.rawValue) })],
                                "started": ["type": "string", "format": "date-time"],
                                "recovered": ["type": "string", "format": "date-time"],
                            ],
                        ],
                    ],
                ],
            ],
            "boards": [
                "type": "object",
                "properties": ["known": ["type": "integer"], "connected": ["type": "integer"], "ready": ["type": "integer"]],
            ],
            "clients": ["type": "integer"],
            "limits": [
                "type": "object", "required": ["maxFrameBytes", "maxCallsPerConnection"],
                "properties": ["maxFrameBytes": ["type": "integer"], "maxCallsPerConnection": ["type": "integer"]],
            ],
            "access": [
                "type": "object", "required": ["controlGroup"],
                "properties": ["controlGroup": ["type": "string"], "readOnlyGroup": ["type": "string"]],
            ],
            "history": [
                "type": "object",
                "required": ["enabled", "path", "dropped"],
                "properties": [
                    "enabled": ["type": "boolean"], "reason": ["type": "string"], "path": ["type": "string"],
                    "dropped": ["type": "integer"],
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
                "unmatched": ["type": "array", "items": ["type": "string"]],
            ],
        ]
    }
}
