/// The wire shape of a `Decodable` type, read from what its `init(from:)` asks for: its
/// fields in the order it reads them, which it requires (`decode`) and which it may go
/// without (`decodeIfPresent`), and each one's JSON Schema, down through the types of the
/// fields. A leaf, or a type whose coding does not follow its fields, tells its own schema
/// (``RPCSchemaDescribed``). So a method's params and result are declared once, as Swift
/// types, and `rpc.discover` and the parameter checks are made from them.
public enum RPCShape {
    /// One field of a keyed type.
    public struct Field: Sendable {
        public var name: String
        /// Read with `decode` (not `decodeIfPresent`), or written even when nil.
        public var required: Bool
        /// Written as `null` when nil rather than left out.
        public var nullable: Bool
        public var schema: JSONValue
        /// The field's type as a parameter type, when it is an ``RPCValue``.
        public var rpcType: RPCValueType?

        public init(name: String, required: Bool, nullable: Bool = false, schema: JSONValue, rpcType: RPCValueType? = nil) {
            (self.name, self.required, self.nullable, self.schema, self.rpcType) = (name, required, nullable, schema, rpcType)
        }
    }

    /// Why a type's shape cannot be read: it decodes a way the reader does not follow.
    public struct Unreadable: Error, CustomStringConvertible {
        public let description: String
    }

    /// The fields `type` reads, in the order it reads them.
    public static func fields<T: Decodable>(of type: T.Type) throws -> [Field] {
        try keyed(type, at: []).fields
    }

    /// `type` as JSON Schema.
    public static func schema<T: Decodable>(of type: T.Type) throws -> JSONValue {
        try read(type, at: []).schema
    }

    /// An object's schema: its fields, those required listed (in order).
    public static func objectSchema(_ fields: [Field]) -> JSONValue {
        var schema: [String: JSONValue] = [
            "type": "object",
            "properties": .object(Dictionary(fields.map { ($0.name, $0.nullable ? orNull($0.schema) : $0.schema) }) { first, _ in first }),
        ]
        let required = fields.filter(\.required).map { JSONValue.string($0.name) }
        if !required.isEmpty { schema["required"] = .array(required) }
        return .object(schema)
    }

    static func orNull(_ schema: JSONValue) -> JSONValue {
        guard var members = schema.objectValue, let type = members["type"]?.stringValue else { return schema }
        members["type"] = [.string(type), "null"]
        if let allowed = members["enum"]?.arrayValue { members["enum"] = .array(allowed + [.null]) }
        return .object(members)
    }

    /// A value of `type` (placeholders throughout) and its schema.
    static func read<T: Decodable>(_ type: T.Type, at path: [any CodingKey]) throws -> (value: T, schema: JSONValue, rpcType: RPCValueType?) {
        if let described = T.self as? any RPCSchemaDescribed.Type {
            return (described.placeholder as! T, described.jsonSchema, (described as? any RPCValue.Type)?.rpcType)
        }
        if let optional = T.self as? any OptionalShape.Type {
            return (optional.absent as! T, orNull(try read(optional.wrapped, at: path).schema), nil)
        }
        if let dictionary = T.self as? any StringKeyedShape.Type {
            let values = try read(dictionary.valueType, at: path).schema
            return (dictionary.empty as! T, ["type": "object", "additionalProperties": values], nil)
        }
        let reader = ShapeReader(path: path)
        let value = try T(from: reader)
        switch reader.shape {
        case .array(let items): return (value, ["type": "array", "items": items], nil)
        case .object(let record): return (value, objectSchema(try nullsMarked(record.fields, of: type, at: path)), nil)
        case .none: throw Unreadable(description: "\(T.self) reads nothing at \(dotted(path)); make it RPCSchemaDescribed")
        }
    }

    /// The fields of a keyed type (none, for one that reads nothing).
    static func keyed<T: Decodable>(_ type: T.Type, at path: [any CodingKey]) throws -> (value: T, fields: [Field]) {
        let reader = ShapeReader(path: path)
        let value = try T(from: reader)
        switch reader.shape {
        case .none: return (value, [])
        case .object(let record): return (value, try nullsMarked(record.fields, of: type, at: path))
        case .array: throw Unreadable(description: "\(T.self) at \(dotted(path)) is a list, not an object")
        }
    }

    /// `fields`, those `type` writes as null when nil (every optional nil, then written)
    /// marked required and nullable.
    static func nullsMarked<T: Decodable>(_ fields: [Field], of type: T.Type, at path: [any CodingKey]) throws -> [Field] {
        guard let written = try T(from: ShapeReader(path: path, optionalsAbsent: true)) as? any Encodable else { return fields }
        let spy = NullSpy()
        try written.encode(to: spy)
        return fields.map { field in
            var field = field
            if spy.nulls.contains(field.name) { (field.required, field.nullable) = (true, true) }
            return field
        }
    }

    static func dotted(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "the top" : path.map(\.stringValue).joined(separator: ".")
    }
}

/// `Optional`, to the shape reader: a value that may be null.
protocol OptionalShape {
    static var wrapped: any Decodable.Type { get }
    static var absent: Self { get }
}

extension Optional: OptionalShape where Wrapped: Decodable {
    static var wrapped: any Decodable.Type { Wrapped.self }
    static var absent: Self { nil }
}

/// A dictionary by string: an object whose every member has one type.
protocol StringKeyedShape {
    static var valueType: any Decodable.Type { get }
    static var empty: Self { get }
}

extension Dictionary: StringKeyedShape where Key == String, Value: Decodable {
    static var valueType: any Decodable.Type { Value.self }
    static var empty: Self { [:] }
}

/// A `Decoder` that answers every question with a placeholder and notes what was asked.
final class ShapeReader: Decoder {
    enum Shape {
        case none
        case object(Record)
        case array(items: JSONValue)
    }

    final class Record {
        var fields: [RPCShape.Field] = []
        var optional: Set<String> = []
    }

    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// Answer that every optional field is absent (else: present, so its type is read).
    let optionalsAbsent: Bool
    var shape = Shape.none

    init(path: [any CodingKey], optionalsAbsent: Bool = false) {
        self.codingPath = path
        self.optionalsAbsent = optionalsAbsent
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let record: Record
        if case .object(let existing) = shape {
            record = existing
        } else {
            record = Record()
            shape = .object(record)
        }
        return KeyedDecodingContainer(Fields(reader: self, record: record))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Items(reader: self) }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw RPCShape.Unreadable(
            description: "a value at \(RPCShape.dotted(codingPath)) decodes itself from one value; make its type RPCValue")
    }

    struct Fields<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let reader: ShapeReader
        let record: Record
        var codingPath: [any CodingKey] { reader.codingPath }
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool { true }

        /// Asked only by `decodeIfPresent`: the field is optional.
        func decodeNil(forKey key: Key) throws -> Bool {
            record.optional.insert(key.stringValue)
            return reader.optionalsAbsent
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let (value, schema, rpcType) = try RPCShape.read(type, at: codingPath + [key])
            if !record.fields.contains(where: { $0.name == key.stringValue }) {
                let required = !record.optional.contains(key.stringValue)
                record.fields.append(.init(name: key.stringValue, required: required, nullable: false, schema: schema, rpcType: rpcType))
            }
            return value
        }

        func nestedContainer<Nested: CodingKey>(keyedBy type: Nested.Type, forKey key: Key) throws -> KeyedDecodingContainer<Nested> {
            throw RPCShape.Unreadable(description: "\(RPCShape.dotted(codingPath + [key])) is read as a nested container; make its type RPCSchemaDescribed")
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw RPCShape.Unreadable(description: "\(RPCShape.dotted(codingPath + [key])) is read as a nested list; make its type RPCSchemaDescribed")
        }

        func superDecoder() throws -> any Decoder { reader }
        func superDecoder(forKey key: Key) throws -> any Decoder { ShapeReader(path: codingPath + [key]) }
    }

    /// A list: one element, read for the type of all.
    struct Items: UnkeyedDecodingContainer {
        let reader: ShapeReader
        var codingPath: [any CodingKey] { reader.codingPath }
        var count: Int? { nil }
        var currentIndex = 0
        var isAtEnd: Bool { currentIndex > 0 }

        mutating func decodeNil() throws -> Bool { false }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (value, schema, _) = try RPCShape.read(type, at: codingPath)
            reader.shape = .array(items: schema)
            currentIndex += 1
            return value
        }

        mutating func nestedContainer<Nested: CodingKey>(keyedBy type: Nested.Type) throws -> KeyedDecodingContainer<Nested> {
            throw RPCShape.Unreadable(description: "a list at \(RPCShape.dotted(codingPath)) nests a container; make its type RPCSchemaDescribed")
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw RPCShape.Unreadable(description: "a list at \(RPCShape.dotted(codingPath)) nests a list; make its type RPCSchemaDescribed")
        }

        mutating func superDecoder() throws -> any Decoder { reader }
    }
}

/// An `Encoder` that notes the keys of the top object written as null (an optional written
/// with `encode`, not `encodeIfPresent`), and drops everything else.
final class NullSpy: Encoder {
    var nulls: Set<String> = []
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    let nested: Bool

    init(nested: Bool = false) { self.nested = nested }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Keys(spy: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer { Dropped() }
    func singleValueContainer() -> any SingleValueEncodingContainer { Dropped() }

    struct Keys<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let spy: NullSpy
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil(forKey key: Key) throws {
            if !spy.nested { spy.nulls.insert(key.stringValue) }
        }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            if let optional = value as? any NilTestable, optional.isNil { try encodeNil(forKey: key) }
        }

        mutating func nestedContainer<Nested: CodingKey>(keyedBy type: Nested.Type, forKey key: Key) -> KeyedEncodingContainer<Nested> {
            KeyedEncodingContainer(Keys<Nested>(spy: NullSpy(nested: true)))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { Dropped() }
        mutating func superEncoder() -> any Encoder { NullSpy(nested: true) }
        mutating func superEncoder(forKey key: Key) -> any Encoder { NullSpy(nested: true) }
    }

    /// Whatever is written into it is dropped.
    struct Dropped: UnkeyedEncodingContainer, SingleValueEncodingContainer {
        var codingPath: [any CodingKey] { [] }
        var count: Int { 0 }
        mutating func encodeNil() throws {}
        mutating func encode<T: Encodable>(_ value: T) throws {}
        mutating func nestedContainer<Nested: CodingKey>(keyedBy type: Nested.Type) -> KeyedEncodingContainer<Nested> {
            KeyedEncodingContainer(Keys<Nested>(spy: NullSpy(nested: true)))
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
        mutating func superEncoder() -> any Encoder { NullSpy(nested: true) }
    }
}

protocol NilTestable {
    var isNil: Bool { get }
}

extension Optional: NilTestable {
    var isNil: Bool { self == nil }
}
