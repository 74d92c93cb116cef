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
    /// A type of the API's own (a string of some shape, say), checked by its own rule.
    case custom(RPCCustomType)
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
        case .custom(let custom): return custom.expectation
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
        case (.custom(let custom), _): return (try? custom.parse(value)) != nil
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
        case .custom(let custom): return custom.jsonSchema
        case .array(let element): return ["type": "array", "items": element.jsonSchema]
        case .any: return [:]
        }
    }
}

/// A parameter type of an API's own: what it expects, its JSON Schema, and how a value is
/// read into the API's own type. The dispatcher reads each such parameter once, before the
/// handler runs, and hands the typed value on (``RPCCheckedParams/typed(_:as:)``).
public struct RPCCustomType: Sendable, Hashable {
    /// A name, unique among the API's types (equality and hashing go by it).
    public let name: String
    /// What a valid value looks like, as a phrase.
    public let expectation: String
    /// JSON Schema of the type, for OpenRPC.
    public let jsonSchema: JSONValue
    /// The value read into the API's type; throws why it is not acceptable (an empty
    /// reason when the expectation says it all).
    public let parse: @Sendable (JSONValue) throws(Problem) -> any Sendable

    /// Why a value is not of the type.
    public struct Problem: Error, Sendable {
        public let reason: String
        public init(_ reason: String = "") { self.reason = reason }
    }

    public init(
        name: String, expectation: String, jsonSchema: JSONValue,
        parse: @escaping @Sendable (JSONValue) throws(Problem) -> any Sendable
    ) {
        self.name = name
        self.expectation = expectation
        self.jsonSchema = jsonSchema
        self.parse = parse
    }

    public static func == (lhs: RPCCustomType, rhs: RPCCustomType) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
