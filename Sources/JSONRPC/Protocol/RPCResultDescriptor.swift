/// What a method returns, for `rpc.discover`.
public struct RPCResultDescriptor: Sendable, Hashable {
    public var name: String
    public var description: String
    /// JSON Schema of the result.
    public var schema: JSONValue

    public init(_ name: String, _ description: String, schema: JSONValue = [:]) {
        self.name = name
        self.description = description
        self.schema = schema
    }
}
