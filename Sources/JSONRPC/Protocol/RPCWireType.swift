/// A type whose JSON Schema is its own to tell: a leaf of a wire shape (a string of some
/// form, an enumeration) or a type whose `Codable` does not follow its properties. Every other
/// `Decodable` type is read for its shape (``RPCShape``) from the fields it decodes.
public protocol RPCSchemaDescribed: Decodable {
    /// The type as JSON Schema, for `rpc.discover`.
    static var jsonSchema: JSONValue { get }
    /// Any value of the type: what ``RPCShape`` hands the `init(from:)` that asks for one.
    static var placeholder: Self { get }
}

/// A type a parameter can have: how the dispatcher checks it and `rpc.discover` publishes it.
public protocol RPCValue: RPCSchemaDescribed {
    static var rpcType: RPCValueType { get }
}

extension RPCValue {
    public static var jsonSchema: JSONValue { rpcType.jsonSchema }
}

/// An enumeration of strings is one of its cases' names.
extension RPCValue where Self: CaseIterable & RawRepresentable, RawValue == String {
    public static var rpcType: RPCValueType { .string(allowed: allCases.map(\.rawValue)) }
    public static var placeholder: Self { allCases.first! }
}

extension String: RPCValue {
    public static var rpcType: RPCValueType { .string() }
    public static var placeholder: String { "" }
}

extension Bool: RPCValue {
    public static var rpcType: RPCValueType { .boolean }
    public static var placeholder: Bool { false }
}

extension Int: RPCValue {
    public static var rpcType: RPCValueType { .integer() }
    public static var placeholder: Int { 0 }
}

extension Int64: RPCValue {
    public static var rpcType: RPCValueType { .integer() }
    public static var placeholder: Int64 { 0 }
}

extension Double: RPCValue {
    public static var rpcType: RPCValueType { .number() }
    public static var placeholder: Double { 0 }
}

extension Array: RPCSchemaDescribed, RPCValue where Element: RPCValue {
    public static var rpcType: RPCValueType { .array(of: Element.rpcType) }
    public static var placeholder: [Element] { [] }
}

extension JSONValue: RPCValue {
    public static var rpcType: RPCValueType { .any }
    public static var placeholder: JSONValue { .null }
}
