public import JSONRPC

// What the fleet's own types are on the wire, for the shapes `rpc.discover` publishes and
// the parameter checks (``RPCShape``): a leaf tells its type; a type whose coding does not
// follow its fields tells its schema, beside that coding.

extension Selection: RPCSchemaDescribed, RPCValue {
    public static var rpcType: RPCValueType { .selection }
    public static var placeholder: Selection { .all }
}

extension BoardAddress: RPCSchemaDescribed, RPCValue {
    public static var rpcType: RPCValueType { .address }
    public static let placeholder = BoardAddress("00:00:00:00:00:00")!
}

extension BoardPhase: RPCSchemaDescribed, RPCValue {}
extension FleetErrorCode: RPCSchemaDescribed, RPCValue {}
extension AdapterCondition: RPCSchemaDescribed, RPCValue {}
extension AdapterSymptom: RPCSchemaDescribed, RPCValue {}
extension RecoveryStep: RPCSchemaDescribed, RPCValue {}
extension HistoryResolution: RPCSchemaDescribed, RPCValue {}
extension EventTopic: RPCValue {}

extension Hex: RPCSchemaDescribed, RPCValue {
    public static var rpcType: RPCValueType { .hex }
    public static var placeholder: Hex { Hex(wrappedValue: []) }
}

/// An error of one board: its code, what happened, and whether trying again may help
/// (written, never read: it follows from the code).
extension FleetError: RPCSchemaDescribed {
    public static let placeholder = FleetError(.absent, "")
    public static var jsonSchema: JSONValue {
        [
            "type": "object", "required": ["code", "message", "retryable"],
            "properties": ["code": FleetErrorCode.jsonSchema, "message": ["type": "string"], "retryable": ["type": "boolean"]],
        ]
    }
}

/// One board's outcome: the outcome's fields and, beside them in the same object, those of
/// its value.
extension BoardOutcome: RPCSchemaDescribed where Value: Codable {
    public static var placeholder: BoardOutcome { BoardOutcome(address: .placeholder, name: nil, result: .failure(.placeholder), latency: .zero) }
    public static var jsonSchema: JSONValue {
        let value: [RPCShape.Field]
        do {
            value = try RPCShape.fields(of: Value.self)
        } catch {
            preconditionFailure("\(Value.self): \(error)")
        }
        func field(_ name: String, _ schema: JSONValue, required: Bool = true) -> RPCShape.Field {
            RPCShape.Field(name: name, required: required, nullable: false, schema: schema)
        }
        let outcome = [
            field("address", ["type": "string"]), field("name", ["type": "string"]), field("ok", ["type": "boolean"]),
            field("error", FleetError.jsonSchema, required: false), field("latencyMs", ["type": "integer"]),
            field("pending", ["type": "boolean"], required: false),
        ]
        // The value's fields are there only when it succeeded.
        return RPCShape.objectSchema(outcome + value.map { var field = $0; field.required = false; return field })
    }
}

/// A fleet-wide call's result: one outcome per board, the totals, the selectors that matched
/// no board.
extension FleetResult: RPCSchemaDescribed where Value: Codable {
    public static var placeholder: FleetResult { FleetResult(outcomes: []) }
    public static var jsonSchema: JSONValue {
        [
            "type": "object", "required": ["results", "totals"],
            "properties": [
                "results": ["type": "array", "items": BoardOutcome<Value>.jsonSchema],
                "totals": [
                    "type": "object", "required": ["ok", "failed"],
                    "properties": ["ok": ["type": "integer"], "failed": ["type": "integer"]],
                ],
                "unmatched": ["type": "array", "items": ["type": "string"]],
            ],
        ]
    }
}
