/// Builds the OpenRPC 1.2.6 document (https://spec.open-rpc.org) that `rpc.discover` returns,
/// from the same descriptors the dispatcher enforces.
public enum OpenRPCDocument {
    public static let version = "1.2.6"

    /// The document for `methods`, titled `title` at API version `apiVersion`.
    public static func make(methods: [RPCMethodDescriptor], title: String, apiVersion: String)
        -> JSONValue
    {
        let usedCodes = Set(methods.flatMap(\.errors))
        let errorComponents = Dictionary(
            usedCodes.map { code in
                (code.name, JSONValue.object(["code": .int(Int64(code.rawValue)), "message": .string(code.meaning)]))
            }, uniquingKeysWith: { first, _ in first })
        return [
            "openrpc": .string(version),
            "info": [
                "title": .string(title),
                "version": .string(apiVersion),
                "description": "JSON-RPC 2.0 over a Unix socket, one JSON text per line.",
            ],
            "methods": .array(methods.map(method)),
            "components": ["errors": .object(errorComponents)],
        ]
    }

    private static func method(_ descriptor: RPCMethodDescriptor) -> JSONValue {
        var members: [String: JSONValue] = [
            "name": .string(descriptor.name),
            "summary": .string(descriptor.summary),
            "paramStructure": "either",
            "params": .array(
                descriptor.params.map { param in
                    [
                        "name": .string(param.name),
                        "description": .string(param.description),
                        "required": .bool(param.required),
                        "schema": param.type.jsonSchema,
                    ]
                }),
            "result": [
                "name": .string(descriptor.result.name),
                "description": .string(descriptor.result.description),
                "schema": descriptor.result.schema,
            ],
            "errors": .array(descriptor.errors.map { ["$ref": .string("#/components/errors/\($0.name)")] }),
            "x-access": .string(descriptor.access.rawValue),
        ]
        if !descriptor.exactlyOneOf.isEmpty {
            members["x-exactly-one-of"] = .array(descriptor.exactlyOneOf.map { .array($0.map(JSONValue.string)) })
        }
        return .object(members)
    }
}
