/// One frame received by a JSON-RPC server, checked against JSON-RPC 2.0 but not yet
/// against any method: a single request, a batch, or a frame that gets one error reply.
/// Read in one pass of ``JSONCodec``: the envelope's members, and the params as a
/// ``JSONValue`` for the method's descriptor to check.
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
    public init(parsing bytes: some Collection<UInt8>) {
        do {
            self = try JSONCodec.decode(Frame.self, from: bytes).incoming
        } catch {
            self = .refused(.parseError(JSONCodec.describe(error)))
        }
    }
}

/// Any member name, so unknown members can be named in the error.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

private struct Frame: Decodable {
    let incoming: RPCIncoming

    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: AnyCodingKey.self) {
            incoming = .single(try RPCIncoming.Item(object))
        } else if var array = try? decoder.unkeyedContainer() {
            guard !array.isAtEnd else {
                incoming = .refused(.invalidRequest("an empty batch (array) holds no request"))
                return
            }
            var items: [RPCIncoming.Item] = []
            while !array.isAtEnd {
                items.append(try array.decode(BatchElement.self).item)
            }
            incoming = .batch(items)
        } else {
            let value = try decoder.singleValueContainer().decode(JSONValue.self)
            incoming = .refused(
                .invalidRequest("a frame must be a request object or a batch array, not \(value.kindDescription)"))
        }
    }
}

private struct BatchElement: Decodable {
    let item: RPCIncoming.Item

    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: AnyCodingKey.self) {
            item = try RPCIncoming.Item(object)
        } else {
            let value = try decoder.singleValueContainer().decode(JSONValue.self)
            item = .invalid(
                id: .null, error: .invalidRequest("a batch element must be a request object, not \(value.kindDescription)"))
        }
    }
}

extension RPCIncoming.Item {
    private static let knownMembers: Set<String> = ["jsonrpc", "method", "params", "id"]

    /// Reads one request object. Throws only when a member is not JSON at all (e.g. a string
    /// with malformed UTF-8): the whole frame is then a parse error.
    init(_ object: KeyedDecodingContainer<AnyCodingKey>) throws {
        func value(_ name: String) throws -> JSONValue? {
            let key = AnyCodingKey(name)
            // Not `nil` in a ternary: JSONValue is ExpressibleByNilLiteral, so it would be `.null`.
            guard object.contains(key) else { return Optional.none }
            return try object.decode(JSONValue.self, forKey: key)
        }
        let id: RPCID?
        switch try value("id") {
        case .none: id = nil
        case .null?: id = .null
        case .string(let string)?: id = .string(string)
        case .int(let number)?: id = .int(number)
        case let other?:
            let kind = other.doubleValue != nil ? "a number that is not a 64-bit integer" : other.kindDescription
            self = .invalid(id: .null, error: .invalidRequest("\"id\" must be a string, an integer or null, not \(kind)"))
            return
        }
        let replyID = id ?? .null
        guard let version = try value("jsonrpc") else {
            self = .invalid(id: replyID, error: .invalidRequest("the member \"jsonrpc\": \"2.0\" is missing"))
            return
        }
        guard version == .string("2.0") else {
            self = .invalid(id: replyID, error: .invalidRequest("\"jsonrpc\" must be the string \"2.0\", not \(version)"))
            return
        }
        guard let methodValue = try value("method") else {
            self = .invalid(id: replyID, error: .invalidRequest("the member \"method\" is missing"))
            return
        }
        guard case .string(let method) = methodValue else {
            self = .invalid(
                id: replyID, error: .invalidRequest("\"method\" must be a string, not \(methodValue.kindDescription)"))
            return
        }
        let params: RPCParams?
        switch try value("params") {
        case .none: params = nil
        case .object(let members)?: params = .byName(members)
        case .array(let elements)?: params = .byPosition(elements)
        case let other?:
            self = .invalid(
                id: replyID, error: .invalidRequest("\"params\" must be an object or an array, not \(other.kindDescription)"))
            return
        }
        if let unknown = object.allKeys.map(\.stringValue).filter({ !Self.knownMembers.contains($0) }).sorted().first {
            self = .invalid(
                id: replyID,
                error: .invalidRequest(
                    "unknown member \(JSONValue.string(unknown)); a request has jsonrpc, method, params and id"))
            return
        }
        self = .request(RPCRequest(method: method, params: params, id: id))
    }
}
