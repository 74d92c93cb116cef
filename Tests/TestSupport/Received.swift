public import JSONRPC

/// A request as the test server received it.
public struct Received: Sendable {
    public let id: JSONValue
    public let method: String
    public let params: JSONValue?

    public init?(_ line: String) {
        guard let value = try? JSONValue(parsing: line), let method = value["method"]?.stringValue else { return nil }
        id = value["id"] ?? .null
        self.method = method
        params = value["params"]
    }

    public func result(_ result: JSONValue) -> String {
        JSONValue.object(["jsonrpc": "2.0", "id": id, "result": result]).description + "\n"
    }

    public func error(_ code: Int, _ message: String, data: JSONValue? = nil) -> String {
        var error: [String: JSONValue] = ["code": .int(Int64(code)), "message": .string(message)]
        if let data { error["data"] = data }
        return JSONValue.object(["jsonrpc": "2.0", "id": id, "error": .object(error)]).description + "\n"
    }
}
