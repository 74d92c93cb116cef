import FleetRPC
public import JSONRPC
public import Logging

/// The JSON-RPC 2.0 protocol engine, independent of sockets and of any catalogue: a frame
/// in, the bytes to reply with out (or nothing, for notifications). It reads the frame once
/// (``RPCIncoming``, Foundation's decoder), checks params against the method's descriptor,
/// applies the ``AccessPolicy``, runs the handler, maps its errors to codes, and writes the
/// reply once (Foundation's encoder, the typed result as it is).
public struct JSONRPCDispatcher: Sendable {
    /// A handler: params checked against the descriptor; returns the result to encode.
    /// Throw ``RPCError`` or an ``RPCErrorConvertible``.
    public typealias Handler =
        @Sendable (_ params: RPCCheckedParams, _ context: RPCContext) async throws -> any Encodable & Sendable

    private struct Entry: Sendable {
        var descriptor: RPCMethodDescriptor
        var handler: Handler?  // nil: the discovery method, answered from the descriptors
    }

    private var entries: [String: Entry] = [:]
    private var order: [String] = []
    private var discovery = (title: "JSON-RPC", version: "0")
    public let policy: AccessPolicy
    private let logger: Logger

    public init(policy: AccessPolicy, logger: Logger) {
        self.policy = policy
        self.logger = logger
    }

    /// The descriptors of the methods served, in registration order.
    public var methods: [RPCMethodDescriptor] {
        order.map { entries[$0]!.descriptor }
    }

    /// The OpenRPC document of the methods served (the discovery method itself left out).
    public var openRPCDocument: JSONValue {
        OpenRPCDocument.make(
            methods: order.compactMap { entries[$0]!.handler == nil ? nil : entries[$0]!.descriptor },
            title: discovery.title, apiVersion: discovery.version)
    }

    // MARK: Registration

    /// Serves `descriptor.name` with `handler`. Registering a name twice is a programming error.
    public mutating func register(_ descriptor: RPCMethodDescriptor, handler: @escaping Handler) {
        add(Entry(descriptor: descriptor, handler: handler))
    }

    /// Serves `method` with a handler taking its typed params and returning its typed result.
    public mutating func register<Method: RPCMethod>(
        _ method: Method.Type, handler: @escaping @Sendable (Method.Params, RPCContext) async throws -> Method.Result
    ) {
        register(method.descriptor) { checked, context in
            try await handler(try Method.Params(checked: checked), context)
        }
    }

    /// Serves `method` (e.g. `rpc.discover`) with the OpenRPC document of every method
    /// registered, titled `title` at API version `version`.
    public mutating func registerDiscovery<Method: RPCMethod>(_ method: Method.Type, title: String, version: String) {
        discovery = (title, version)
        add(Entry(descriptor: method.descriptor, handler: nil))
    }

    private mutating func add(_ entry: Entry) {
        precondition(entries[entry.descriptor.name] == nil, "\(entry.descriptor.name) is registered twice")
        entries[entry.descriptor.name] = entry
        order.append(entry.descriptor.name)
    }

    // MARK: Dispatch

    /// Answers one frame (without its newline). `nil` when nothing is to be sent
    /// (notifications only). The calls of a batch run concurrently.
    public func handle(frame: some Collection<UInt8>, connection: RPCConnection) async -> [UInt8]? {
        switch RPCIncoming(parsing: frame) {
        case .refused(let error):
            logger.debug(
                "Refused a frame", metadata: ["client.pid": "\(connection.credentials.pid)", "rpc.error": "\(error.message)"])
            return Self.write(RPCReply(id: .null, outcome: .error(error)))
        case .single(let item):
            return await handle(item, connection: connection).flatMap(Self.write)
        case .batch(let items):
            let replies = await withTaskGroup(of: (Int, RPCReply?).self) { group in
                for (position, item) in items.enumerated() {
                    group.addTask { (position, await self.handle(item, connection: connection)) }
                }
                var collected: [(Int, RPCReply)] = []
                for await (position, reply) in group {
                    if let reply { collected.append((position, reply)) }
                }
                return collected.sorted { $0.0 < $1.0 }.map(\.1)
            }
            return replies.isEmpty ? nil : Self.write(replies)
        }
    }

    /// Answers every request of `frame` that has an id with `error` without running anything
    /// (used when a connection has too many calls in flight). `nil` when nothing is to be sent.
    public func refuse(frame: some Collection<UInt8>, with error: RPCError) -> [UInt8]? {
        func refusal(_ item: RPCIncoming.Item) -> RPCReply? {
            switch item {
            case .invalid(let id, let invalid): return RPCReply(id: id, outcome: .error(invalid))
            case .request(let request): return request.id.map { RPCReply(id: $0, outcome: .error(error)) }
            }
        }
        switch RPCIncoming(parsing: frame) {
        case .refused(let refusal): return Self.write(RPCReply(id: .null, outcome: .error(refusal)))
        case .single(let item): return refusal(item).flatMap(Self.write)
        case .batch(let items):
            let replies = items.compactMap(refusal)
            return replies.isEmpty ? nil : Self.write(replies)
        }
    }

    private func handle(_ item: RPCIncoming.Item, connection: RPCConnection) async -> RPCReply? {
        switch item {
        case .invalid(let id, let error):
            return RPCReply(id: id, outcome: .error(error))
        case .request(let request):
            let outcome = await call(request, connection: connection)
            return request.id.map { RPCReply(id: $0, outcome: outcome) }
        }
    }

    /// Runs one request: method lookup, access, params, handler. Returns its outcome (also
    /// for notifications, whose outcome is dropped).
    func call(_ request: RPCRequest, connection: RPCConnection) async -> RPCReply.Outcome {
        guard let entry = entries[request.method] else { return .error(.methodNotFound(request.method)) }
        let descriptor = entry.descriptor
        var callLogger = logger
        callLogger[metadataKey: "rpc.method"] = "\(request.method)"
        callLogger[metadataKey: "client.uid"] = "\(connection.credentials.uid)"
        callLogger[metadataKey: "client.pid"] = "\(connection.credentials.pid)"

        let role = policy.role(for: connection.credentials)
        if let refusal = policy.refusal(for: descriptor, role: role, credentials: connection.credentials) {
            callLogger.notice("Refused a call: permission denied", metadata: ["client.role": "\(role.rawValue)"])
            return .error(refusal)
        }
        let params: RPCCheckedParams
        do {
            params = try descriptor.validate(request.params)
        } catch {
            return .error(error)
        }
        guard let handler = entry.handler else { return .result(openRPCDocument) }
        let context = RPCContext(method: descriptor, id: request.id, connection: connection, role: role, logger: callLogger)
        let outcome: RPCReply.Outcome
        do {
            outcome = .result(try await handler(params, context))
        } catch let error as RPCError {
            outcome = .error(error)
        } catch let error as any RPCErrorConvertible {
            outcome = .error(error.rpcError)
        } catch is CancellationError {
            outcome = .error(RPCError(.shuttingDown, "The call was cancelled because the daemon is shutting down."))
        } catch {
            callLogger.error("A handler failed unexpectedly", metadata: ["error": "\(String(reflecting: error))"])
            outcome = .error(.internalError)
        }
        if descriptor.access == .write {
            switch outcome {
            case .result: callLogger.info("State-changing call succeeded")
            case .error(let error): callLogger.info("State-changing call failed", metadata: ["rpc.error.code": "\(error.code)"])
            }
        }
        return outcome
    }

    /// The reply's JSON text; a result that cannot be encoded (a non-finite number) becomes
    /// an internal error rather than a broken frame.
    private static func write(_ reply: RPCReply) -> [UInt8]? {
        if let bytes = try? JSONCodec.encode(reply) { return bytes }
        return try? JSONCodec.encode(RPCReply(id: reply.id, outcome: .error(.internalError)))
    }

    private static func write(_ replies: [RPCReply]) -> [UInt8]? {
        if let bytes = try? JSONCodec.encode(replies) { return bytes }
        return try? JSONCodec.encode(
            replies.map { reply in
                (try? JSONCodec.encode(reply)) == nil ? RPCReply(id: reply.id, outcome: .error(.internalError)) : reply
            })
    }
}
