/// One frame received by a JSON-RPC server, checked against JSON-RPC 2.0 but not yet
/// against any method: a single request, a batch, or a frame that gets one error reply.
public enum RPCIncoming: Sendable, Hashable {
    /// A single request object (which may still be invalid).
    case single(Item)
    /// A non-empty batch; each element answered on its own.
    case batch([Item])
    /// The frame as a whole is refused (parse error, empty batch, not an object or array):
    /// the reply is this error with id null.
    case refused(RPCError)

    /// One request of a frame.
    public enum Item: Sendable, Hashable {
        case request(RPCRequest)
        /// Not a valid request; reply with `error` under `id` (null when unreadable).
        case invalid(id: RPCID, error: RPCError)
    }

    /// Reads a frame. Never throws: every defect becomes an error to reply with.
    public init(parsing bytes: some Collection<UInt8>, maxDepth: Int = JSONValue.defaultMaxDepth) {
        var parser = JSONParser(Array(bytes), maxDepth: maxDepth)
        let frame: JSONParser.Frame
        do {
            frame = try parser.parseFrame()
        } catch {
            self = .refused(.parseError(error.description))
            return
        }
        switch frame {
        case .object(let object):
            self = .single(Item(object))
        case .array(let elements):
            guard !elements.isEmpty else {
                self = .refused(.invalidRequest("an empty batch (array) holds no request"))
                return
            }
            self = .batch(
                elements.map { element in
                    switch element {
                    case .object(let object): return Item(object)
                    case .other(let value):
                        return .invalid(
                            id: .null,
                            error: .invalidRequest("a batch element must be a request object, not \(value.kindDescription)"))
                    }
                })
        case .other(let value):
            self = .refused(.invalidRequest("a frame must be a request object or a batch array, not \(value.kindDescription)"))
        }
    }
}

extension RPCIncoming.Item {
    private static let knownMembers: Set<String> = ["jsonrpc", "method", "params", "id"]

    init(_ object: JSONParser.TopLevelObject) {
        let members = object.members
        let id: RPCID?
        switch object.id {
        case .absent: id = nil
        case .valid(let value): id = value
        case .invalid:
            let kind = members["id"]?.kindDescription ?? "missing"
            self = .invalid(id: .null, error: .invalidRequest("\"id\" must be a string, a number or null, not \(kind)"))
            return
        }
        let replyID = id ?? .null
        guard let version = members["jsonrpc"] else {
            self = .invalid(id: replyID, error: .invalidRequest("the member \"jsonrpc\": \"2.0\" is missing"))
            return
        }
        guard version == .string("2.0") else {
            self = .invalid(id: replyID, error: .invalidRequest("\"jsonrpc\" must be the string \"2.0\", not \(version)"))
            return
        }
        guard let methodValue = members["method"] else {
            self = .invalid(id: replyID, error: .invalidRequest("the member \"method\" is missing"))
            return
        }
        guard case .string(let method) = methodValue else {
            self = .invalid(id: replyID, error: .invalidRequest("\"method\" must be a string, not \(methodValue.kindDescription)"))
            return
        }
        let params: RPCParams?
        switch members["params"] {
        case nil: params = nil
        case .object(let value)?: params = .byName(value)
        case .array(let value)?: params = .byPosition(value)
        case let other?:
            self = .invalid(
                id: replyID, error: .invalidRequest("\"params\" must be an object or an array, not \(other.kindDescription)"))
            return
        }
        if let unknown = members.keys.filter({ !Self.knownMembers.contains($0) }).sorted().first {
            self = .invalid(
                id: replyID,
                error: .invalidRequest("unknown member \(JSONValue.string(unknown)); a request has jsonrpc, method, params and id"))
            return
        }
        self = .request(RPCRequest(method: method, params: params, id: id))
    }
}
