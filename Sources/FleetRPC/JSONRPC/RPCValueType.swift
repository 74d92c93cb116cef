/// The type of a method parameter: what the dispatcher checks before a handler runs, and
/// what `rpc.discover` publishes as JSON Schema.
public indirect enum RPCValueType: Sendable, Hashable {
    /// Any string; if `allowed` is given, one of those.
    case string(allowed: [String]? = nil)
    /// An integer in an optional range.
    case integer(minimum: Int64? = nil, maximum: Int64? = nil)
    /// A number in an optional range.
    case number(minimum: Double? = nil, maximum: Double? = nil)
    case boolean
    /// A board selection: "all", an address, a name or alias, a glob, or a list of those.
    case selection
    /// A Bluetooth address, `AA:BB:CC:DD:EE:FF`.
    case address
    /// A UUID, 128-bit form (`0000180f-0000-1000-8000-00805f9b34fb`) or 16-bit (`180f`).
    case uuid
    /// Bytes as an even number of hexadecimal digits (`"01"`, `"0a1b"`).
    case hex
    /// An array whose elements are all of one type.
    case array(of: RPCValueType)
    /// Any JSON value.
    case any

    /// What a valid value looks like, as a phrase: "an integer from 0 to 60000".
    public var expectation: String {
        switch self {
        case .string(let allowed?):
            return "one of " + allowed.map { "\"\($0)\"" }.joined(separator: ", ")
        case .string(nil): return "a string"
        case .integer(let minimum, let maximum):
            switch (minimum, maximum) {
            case (let low?, let high?): return "an integer from \(low) to \(high)"
            case (let low?, nil): return "an integer of at least \(low)"
            case (nil, let high?): return "an integer of at most \(high)"
            case (nil, nil): return "an integer"
            }
        case .number(let minimum, let maximum):
            switch (minimum, maximum) {
            case (let low?, let high?): return "a number from \(low) to \(high)"
            case (let low?, nil): return "a number of at least \(low)"
            case (nil, let high?): return "a number of at most \(high)"
            case (nil, nil): return "a number"
            }
        case .boolean: return "a boolean (true or false)"
        case .selection:
            return "\"all\", a board address, name, alias or glob, or a non-empty list of those"
        case .address: return "a Bluetooth address like \"AA:BB:CC:DD:EE:FF\""
        case .uuid: return "a UUID like \"d888a9c3-f3cc-11ed-a05b-0242ac120003\" or a 16-bit one like \"180f\""
        case .hex: return "a hexadecimal byte string like \"01\" (an even number of hex digits)"
        case .array(let element): return "an array of \(element.pluralExpectation)"
        case .any: return "any JSON value"
        }
    }

    private var pluralExpectation: String {
        switch self {
        case .string(nil): return "strings"
        case .boolean: return "booleans"
        case .integer(nil, nil): return "integers"
        default: return "elements each \(expectation)"
        }
    }

    /// Whether `value` is acceptable.
    public func accepts(_ value: JSONValue) -> Bool {
        switch (self, value) {
        case (.string(let allowed), .string(let string)):
            return allowed.map { $0.contains(string) } ?? true
        case (.integer(let minimum, let maximum), _):
            guard let number = value.int64Value else { return false }
            return number >= (minimum ?? .min) && number <= (maximum ?? .max)
        case (.number(let minimum, let maximum), .int), (.number(let minimum, let maximum), .double):
            guard let number = value.doubleValue else { return false }
            return number >= (minimum ?? -.infinity) && number <= (maximum ?? .infinity)
        case (.boolean, .bool): return true
        case (.selection, _): return (try? Selection(validating: value)) != nil
        case (.address, .string(let string)): return BoardAddress.isValid(string)
        case (.uuid, .string(let string)): return RPCValueType.isUUID(string)
        case (.hex, .string(let string)): return HexBytes.decode(string) != nil
        case (.array(let element), .array(let elements)): return elements.allSatisfy(element.accepts)
        case (.any, _): return true
        default: return false
        }
    }

    /// The type as JSON Schema (for OpenRPC).
    public var jsonSchema: JSONValue {
        switch self {
        case .string(let allowed?): return ["type": "string", "enum": .array(allowed.map(JSONValue.string))]
        case .string(nil): return ["type": "string"]
        case .integer(let minimum, let maximum):
            var schema: [String: JSONValue] = ["type": "integer"]
            if let minimum { schema["minimum"] = .int(minimum) }
            if let maximum { schema["maximum"] = .int(maximum) }
            return .object(schema)
        case .number(let minimum, let maximum):
            var schema: [String: JSONValue] = ["type": "number"]
            if let minimum { schema["minimum"] = .double(minimum) }
            if let maximum { schema["maximum"] = .double(maximum) }
            return .object(schema)
        case .boolean: return ["type": "boolean"]
        case .selection:
            return [
                "oneOf": [
                    ["type": "string", "minLength": 1],
                    ["type": "array", "items": ["type": "string", "minLength": 1], "minItems": 1],
                ]
            ]
        case .address: return ["type": "string", "pattern": "^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"]
        case .uuid:
            return [
                "type": "string",
                "pattern": "^([0-9A-Fa-f]{4}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})$",
            ]
        case .hex: return ["type": "string", "pattern": "^([0-9A-Fa-f]{2})*$"]
        case .array(let element): return ["type": "array", "items": element.jsonSchema]
        case .any: return [:]
        }
    }

    static func isUUID(_ string: String) -> Bool {
        let bytes = Array(string.utf8)
        let isHex = { (byte: UInt8) in HexBytes.nibble(byte) != nil }
        if bytes.count == 4 { return bytes.allSatisfy(isHex) }
        guard bytes.count == 36 else { return false }
        for (position, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(position) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if !isHex(byte) {
                return false
            }
        }
        return true
    }
}
