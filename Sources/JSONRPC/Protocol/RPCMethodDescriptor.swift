/// Everything known about one method: its name and contract. One list of these feeds both
/// the dispatcher (parameter checks, access control) and `rpc.discover`, so they cannot drift.
public struct RPCMethodDescriptor: Sendable, Hashable {
    public var name: String
    /// One sentence for the method list.
    public var summary: String
    /// Parameters in positional order (a by-position call maps onto this order).
    public var params: [RPCParamDescriptor]
    /// Groups of parameter names of which exactly one must be given (e.g. `select` or `address`).
    public var exactlyOneOf: [[String]]
    public var result: RPCResultDescriptor
    /// Whether the method changes state (`.write`) or only reads it.
    public var access: RPCAccess
    /// The errors, besides the protocol ones, the method can answer with.
    public var errors: [RPCErrorCode]

    public init(
        name: String, summary: String, params: [RPCParamDescriptor] = [], exactlyOneOf: [[String]] = [],
        result: RPCResultDescriptor, access: RPCAccess, errors: [RPCErrorCode] = []
    ) {
        self.name = name
        self.summary = summary
        self.params = params
        self.exactlyOneOf = exactlyOneOf
        self.result = result
        self.access = access
        self.errors = errors
    }

    /// Checks `params` against this descriptor and returns them by name, absent optional
    /// ones (and ones given as null) left out, each of a custom type read into its own type
    /// (once). Throws `-32602` naming the parameter and what it expects: unknown, missing,
    /// extra positional and mistyped parameters are refused.
    public func validate(_ params: RPCParams?) throws(RPCError) -> RPCCheckedParams {
        var named: [String: JSONValue] = [:]
        switch params {
        case nil:
            break
        case .byPosition(let values):
            guard values.count <= self.params.count else {
                let names = self.params.map(\.name).joined(separator: ", ")
                throw .invalidParams(
                    "\(name) takes at most \(self.params.count) parameter\(self.params.count == 1 ? "" : "s")"
                        + (names.isEmpty ? "" : " (\(names))") + ", got \(values.count)")
            }
            for (position, value) in values.enumerated() {
                named[self.params[position].name] = value
            }
        case .byName(var members):
            // `_meta` is out-of-band information about the call (``RPCRequest/meta``), never a parameter.
            members["_meta"] = nil
            for key in members.keys.sorted() where !self.params.contains(where: { $0.name == key }) {
                let names = self.params.map(\.name).joined(separator: ", ")
                throw .invalidParams(
                    "unknown parameter \(JSONValue.string(key)); \(name) takes "
                        + (names.isEmpty ? "no parameters" : names))
            }
            named = members
        }
        var checked: [String: JSONValue] = [:]
        var typed: [String: any Sendable] = [:]
        for param in self.params {
            let value = named[param.name]
            guard let value, value != .null else {
                if param.required {
                    throw .invalidParams("missing required parameter \"\(param.name)\" (\(param.type.expectation))")
                }
                continue
            }
            if case .custom(let custom) = param.type {
                do {
                    typed[param.name] = try custom.parse(value)
                } catch {
                    throw .invalidParams(
                        error.reason.isEmpty
                            ? "\"\(param.name)\" must be \(param.type.expectation), got \(Self.describe(value))"
                            : "\"\(param.name)\": \(error.reason)")
                }
            } else if !param.type.accepts(value) {
                throw .invalidParams(
                    "\"\(param.name)\" must be \(param.type.expectation), got \(Self.describe(value))")
            }
            checked[param.name] = value
        }
        for group in exactlyOneOf {
            let given = group.filter { checked[$0] != nil }
            guard given.count == 1 else {
                let list = group.map { "\"\($0)\"" }.joined(separator: " or ")
                throw .invalidParams(given.isEmpty ? "give \(list)" : "give only one of \(list), not both")
            }
        }
        return RPCCheckedParams(checked, typed: typed)
    }

    private static func describe(_ value: JSONValue) -> String {
        switch value {
        case .string(let string) where string.count <= 40: return "\(value.kindDescription) \(JSONValue.string(string))"
        case .int, .double, .bool: return "\(value.kindDescription) \(value)"
        default: return value.kindDescription
        }
    }
}
