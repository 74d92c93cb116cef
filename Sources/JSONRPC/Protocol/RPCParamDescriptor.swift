/// One parameter of a method, as the dispatcher checks it and `rpc.discover` publishes it.
public struct RPCParamDescriptor: Sendable, Hashable {
    public var name: String
    public var type: RPCValueType
    public var required: Bool
    public var description: String

    public init(_ name: String, _ type: RPCValueType, required: Bool = false, _ description: String) {
        self.name = name
        self.type = type
        self.required = required
        self.description = description
    }
}
