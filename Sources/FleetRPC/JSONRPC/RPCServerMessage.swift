/// A frame a client receives from the server: responses (one, or a batch) or a
/// server→client notification (an event).
public enum RPCServerMessage: Sendable, Hashable {
    case response(RPCResponse)
    case batch([RPCResponse])
    case notification(RPCRequest)

    /// Reads a frame sent by the server; ids are kept exactly as written.
    public init(parsing bytes: some Collection<UInt8>, maxDepth: Int = JSONValue.defaultMaxDepth) throws(JSONParseError) {
        var parser = JSONParser(Array(bytes), maxDepth: maxDepth)
        switch try parser.parseFrame() {
        case .object(let object):
            if object.members["method"] != nil {
                guard case .request(let request) = RPCIncoming.Item(object) else {
                    throw JSONParseError("the server sent an invalid notification", offset: 0)
                }
                self = .notification(request)
            } else {
                self = .response(try RPCResponse(object))
            }
        case .array(let elements):
            var responses: [RPCResponse] = []
            for element in elements {
                guard case .object(let object) = element else {
                    throw JSONParseError("a batch reply element is not an object", offset: 0)
                }
                responses.append(try RPCResponse(object))
            }
            self = .batch(responses)
        case .other:
            throw JSONParseError("the server sent neither an object nor an array", offset: 0)
        }
    }
}

extension RPCResponse {
    /// Reads one response object, keeping its id exactly.
    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        guard case .response(let response) = try RPCServerMessage(parsing: bytes) else {
            throw JSONParseError("the frame is not a single response", offset: 0)
        }
        self = response
    }

    init(_ object: JSONParser.TopLevelObject) throws(JSONParseError) {
        let members = object.members
        guard members["jsonrpc"] == .string("2.0") else {
            throw JSONParseError("a response needs \"jsonrpc\": \"2.0\"", offset: 0)
        }
        guard case .valid(let id) = object.id else {
            throw JSONParseError("a response needs an id that is a string, a number or null", offset: 0)
        }
        switch (members["result"], members["error"]) {
        case (let result?, nil):
            self.init(id: id, result: result)
        case (nil, let error?):
            guard case .object(let fields) = error, let code = fields["code"]?.int64Value,
                let message = fields["message"]?.stringValue, let intCode = Int(exactly: code)
            else {
                throw JSONParseError("a response error needs an integer \"code\" and a string \"message\"", offset: 0)
            }
            self.init(id: id, error: RPCError(code: intCode, message: message, data: fields["data"]))
        default:
            throw JSONParseError("a response has either \"result\" or \"error\", not both or neither", offset: 0)
        }
    }
}
