/// One RPC method: its contract (``descriptor``), its params and its result, in one place.
/// The server binds a handler to it (`JSONRPCDispatcher.register(_:handler:)`), the client
/// calls it (`FleetRPCClient.call(_:_:)`), and `rpc.discover` publishes it.
public protocol RPCMethod: Sendable {
    associatedtype Params: RPCMethodParams = RPCNoParams
    associatedtype Result: Codable & Sendable
    /// Name, params (checked before a handler runs), result, access and errors.
    static var descriptor: RPCMethodDescriptor { get }
}

extension RPCMethod {
    /// The method's wire name, e.g. `"led.set"`.
    public static var name: String { descriptor.name }
}

/// The params of a method: written by a client, read by the server from params the
/// method's descriptor has already checked, by their `Codable` conformance (one declaration:
/// the stored properties, named as on the wire). The descriptor's parameters are read from
/// the same declaration (``RPCMethod/describe(_:_:params:exactlyOneOf:result:access:errors:)``).
public protocol RPCMethodParams: Codable, Sendable {
    /// Reads the checked params (by default through `Codable`; see the extension).
    init(checked params: RPCCheckedParams) throws(RPCError)
}

extension RPCMethodParams {
    /// Decodes the checked params: the descriptor has already checked every name, type and
    /// range, so a failure here is a params type that disagrees with its descriptor.
    public init(checked params: RPCCheckedParams) throws(RPCError) {
        do {
            self = try JSONCodec.decode(Self.self, from: JSONCodec.encode(params.values))
        } catch {
            throw .invalidParams(JSONCodec.describe(error))
        }
    }
}

/// The params of a method that takes none.
public struct RPCNoParams: RPCMethodParams, Hashable {
    public init() {}
    /// Nothing to read: no JSON round trip (`daemon.status` is called in loops).
    public init(checked params: RPCCheckedParams) {}
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws {
        _ = encoder.container(keyedBy: AnyCodingKey.self)
    }
}

/// What a parameter is for, and its type where the Swift type says less than the wire
/// checks (a range, a UUID): the part of a parameter its declaration cannot carry.
public struct RPCParamNote: Sendable, ExpressibleByStringLiteral {
    public var description: String
    public var type: RPCValueType?

    public init(_ description: String, _ type: RPCValueType? = nil) {
        self.description = description
        self.type = type
    }

    public init(stringLiteral description: String) { self.init(description) }
}

extension RPCMethod {
    /// The descriptor of this method: its parameters are the fields of ``Params`` in the
    /// order they are declared, required unless optional, each of its Swift type (or the
    /// type its note gives) and described by its note in `params`; its result's schema is
    /// ``Result``'s shape. A field without a note, a note without a field, or a type whose
    /// shape cannot be read is a programming error, found by the first test that lists the
    /// methods.
    public static func describe(
        _ name: String, _ summary: String, params notes: [String: RPCParamNote] = [:], exactlyOneOf: [[String]] = [],
        result: RPCResultDescriptor, access: RPCAccess, errors: [RPCErrorCode]
    ) -> RPCMethodDescriptor {
        do {
            let params = try RPCShape.parameters(of: Params.self, notes: notes, exactlyOneOf: exactlyOneOf)
            var result = result
            result.schema = try RPCShape.schema(of: Result.self)
            return RPCMethodDescriptor(
                name: name, summary: summary, params: params, exactlyOneOf: exactlyOneOf, result: result, access: access,
                errors: errors)
        } catch {
            preconditionFailure("\(name): \(error)")
        }
    }
}

/// Params by name after ``RPCMethodDescriptor/validate(_:)``: every value has the type its
/// descriptor says, absent and null optional ones are left out, and each of a custom type
/// is also held read into its own type. Reading one the descriptor did not promise is a
/// programming error answered with `-32602`.
public struct RPCCheckedParams: Sendable {
    public let values: [String: JSONValue]
    /// The custom-typed ones, as their type read them (``RPCCustomType/parse``).
    let parsed: [String: any Sendable]

    public init(_ values: [String: JSONValue], typed: [String: any Sendable] = [:]) {
        self.values = values
        self.parsed = typed
    }

    /// The custom-typed parameter `name` as its type read it; nil when absent.
    public func typed<Value: Sendable>(_ name: String, as type: Value.Type) throws(RPCError) -> Value? {
        guard values[name] != nil else { return nil }
        guard let value = parsed[name] as? Value else {
            throw .invalidParams("\"\(name)\" was not read as \(Value.self)")
        }
        return value
    }

    public subscript(name: String) -> JSONValue? { values[name] }

    /// The value of `name` read by `read`; `nil` when absent.
    public func optional<Value>(_ name: String, _ read: (JSONValue) -> Value?) throws(RPCError) -> Value? {
        guard let value = values[name] else { return nil }
        guard let read = read(value) else {
            throw .invalidParams("\"\(name)\" has the wrong type (\(value.kindDescription))")
        }
        return read
    }

    /// The value of `name` read by `read`; a missing one is `-32602`.
    public func required<Value>(_ name: String, _ read: (JSONValue) -> Value?) throws(RPCError) -> Value {
        guard let value = try optional(name, read) else { throw .invalidParams("missing required parameter \"\(name)\"") }
        return value
    }

    public func string(_ name: String) throws(RPCError) -> String { try required(name, \.stringValue) }
    public func optionalString(_ name: String) throws(RPCError) -> String? { try optional(name, \.stringValue) }
    public func bool(_ name: String) throws(RPCError) -> Bool { try required(name, \.boolValue) }
    public func optionalBool(_ name: String) throws(RPCError) -> Bool? { try optional(name, \.boolValue) }
    public func double(_ name: String) throws(RPCError) -> Double { try required(name, \.doubleValue) }
    public func optionalInt(_ name: String) throws(RPCError) -> Int? {
        try optional(name) { $0.int64Value.flatMap { Int(exactly: $0) } }
    }
    public func int(_ name: String) throws(RPCError) -> Int {
        try required(name) { $0.int64Value.flatMap { Int(exactly: $0) } }
    }
}

extension RPCShape {
    /// The parameters of `Params`: its fields in the order it declares them, required unless
    /// optional, each of its Swift type (or the type its note gives) and described by its
    /// note. Throws, naming it, for a field without a note or a parameter type, a note or a
    /// name in `exactlyOneOf` for no field, and a required field in `exactlyOneOf`.
    public static func parameters<Params: Decodable>(
        of type: Params.Type, notes: [String: RPCParamNote], exactlyOneOf: [[String]] = []
    ) throws -> [RPCParamDescriptor] {
        let fields = try fields(of: type)
        let params = try fields.map { field throws -> RPCParamDescriptor in
            guard let note = notes[field.name] else { throw Unreadable(description: "\(field.name) has no note") }
            guard let type = note.type ?? field.rpcType else {
                throw Unreadable(description: "\(field.name) is of no parameter type (RPCValue)")
            }
            return RPCParamDescriptor(field.name, type, required: field.required, note.description)
        }
        if let stray = notes.keys.sorted().first(where: { name in !fields.contains { $0.name == name } }) {
            throw Unreadable(description: "the note on \(stray) is for no field of \(Params.self)")
        }
        for name in exactlyOneOf.joined() {
            guard let param = params.first(where: { $0.name == name }) else {
                throw Unreadable(description: "exactlyOneOf names \(name), no field of \(Params.self)")
            }
            if param.required { throw Unreadable(description: "\(name) is required, so it cannot be one of exactlyOneOf") }
        }
        return params
    }
}
