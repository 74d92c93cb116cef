import FleetRPC
public import JSONRPC
public import Logging

/// The JSON-RPC 2.0 protocol engine, independent of sockets and of any catalogue: a frame
/// in, the bytes to reply with out (or nothing, for notifications). It reads the frame once
/// (``RPCIncoming``, Foundation's decoder), checks params against the method's descriptor,
/// applies the ``AccessPolicy``, runs the handler, maps its errors to codes, and writes the
/// reply once (Foundation's encoder, the typed result as it is).
///
/// A method whose answer never waits (it reads a snapshot: `daemon.status`) is registered
/// with ``register(immediate:handler:)`` and answered by ``answerAtOnce(_:credentials:)``
/// on the connection's event loop, as the frame is read: no task, no thread hop.
public struct JSONRPCDispatcher: Sendable {
    /// A handler: params checked against the descriptor; returns the result to encode.
    /// Throw ``RPCError`` or an ``RPCErrorConvertible``.
    public typealias Handler =
        @Sendable (_ params: RPCCheckedParams, _ context: RPCContext) async throws -> any Encodable & Sendable
    /// A handler that answers without waiting or blocking (it reads what is already known).
    public typealias ImmediateHandler = @Sendable (_ params: RPCCheckedParams) throws -> any Encodable & Sendable

    private enum Run: Sendable {
        case waits(Handler)
        case atOnce(ImmediateHandler)
        /// The discovery method, answered from the descriptors.
        case discovery
    }

    private struct Entry: Sendable {
        var descriptor: RPCMethodDescriptor
        var run: Run
    }

    /// What ``answerAtOnce(_:credentials:)`` made of a frame.
    public enum ImmediateAnswer: Sendable {
        /// Answered: the reply to send, `nil` when there is none (a notification).
        case answered([UInt8]?)
        /// Something in the frame waits: answer it with ``handle(_:connection:)`` in a task.
        case waits
    }

    private var entries: [String: Entry] = [:]
    private var order: [String] = []
    private var discovery = (title: "JSON-RPC", version: "0")
    public let policy: AccessPolicy
    /// Refused calls, logged once a minute per user.
    private let refusals = ThrottledNotes()
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
            methods: order.compactMap { if case .discovery = entries[$0]!.run { nil } else { entries[$0]!.descriptor } },
            title: discovery.title, apiVersion: discovery.version)
    }

    // MARK: Registration

    /// Serves `descriptor.name` with `handler`. Registering a name twice is a programming error.
    public mutating func register(_ descriptor: RPCMethodDescriptor, handler: @escaping Handler) {
        add(Entry(descriptor: descriptor, run: .waits(handler)))
    }

    /// Serves `descriptor.name` with a handler that never waits, answered on the event loop.
    public mutating func register(immediate descriptor: RPCMethodDescriptor, handler: @escaping ImmediateHandler) {
        add(Entry(descriptor: descriptor, run: .atOnce(handler)))
    }

    /// Serves `method` with a handler taking its typed params and returning its typed result.
    public mutating func register<Method: RPCMethod>(
        _ method: Method.Type, handler: @escaping @Sendable (Method.Params, RPCContext) async throws -> Method.Result
    ) {
        register(method.descriptor) { checked, context in
            try await handler(try Method.Params(checked: checked), context)
        }
    }

    /// Serves `method` with a handler that never waits (see ``register(immediate:handler:)``).
    public mutating func register<Method: RPCMethod>(
        immediate method: Method.Type, handler: @escaping @Sendable (Method.Params) throws -> Method.Result
    ) {
        register(immediate: method.descriptor) { checked in try handler(try Method.Params(checked: checked)) }
    }

    /// Serves `method` (e.g. `rpc.discover`) with the OpenRPC document of every method
    /// registered, titled `title` at API version `version`.
    public mutating func registerDiscovery<Method: RPCMethod>(_ method: Method.Type, title: String, version: String) {
        discovery = (title, version)
        add(Entry(descriptor: method.descriptor, run: .discovery))
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
        await handle(RPCIncoming(parsing: frame), connection: connection)
    }

    /// Answers one frame already read.
    public func handle(_ incoming: RPCIncoming, connection: RPCConnection) async -> [UInt8]? {
        await handle(incoming, connection: connection, runningFirst: Int.max, refusingTheRest: nil)
    }

    /// Answers one frame already read, running only its first `admitted` calls (a batch's
    /// items in order; a single call is one) and answering the others with `refusal`: the
    /// calls past a cap (``RPCError`` `-32004`, busy).
    public func handle(
        _ incoming: RPCIncoming, connection: RPCConnection, runningFirst admitted: Int, refusingTheRest refusal: RPCError?
    ) async -> [UInt8]? {
        if admitted <= 0, let refusal { return refuse(incoming, with: refusal) }
        switch incoming {
        case .refused(let error):
            return refused(error, pid: connection.credentials.pid)
        case .single(let item):
            return await handle(item, connection: connection).flatMap(Self.write)
        case .batch(let items):
            let replies = await withTaskGroup(of: (Int, RPCReply?).self) { group in
                for (position, item) in items.enumerated() {
                    if position >= admitted, let refusal {
                        group.addTask { (position, Self.refusal(of: item, with: refusal)) }
                        continue
                    }
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

    /// Answers `incoming` now if nothing in it waits: a frame refused as a whole, an invalid
    /// request, an unknown method, a call refused by access or params, or a single call of a
    /// method registered with ``register(immediate:handler:)``. Batches always wait, and so
    /// does a call whose caller's role is not cached (finding it may wait on NSS).
    public func answerAtOnce(_ incoming: RPCIncoming, credentials: PeerCredentials) -> ImmediateAnswer {
        switch incoming {
        case .refused(let error):
            return .answered(refused(error, pid: credentials.pid))
        case .batch:
            return .waits
        case .single(.invalid(let id, let error)):
            return .answered(Self.write(RPCReply(id: id, outcome: .error(error))))
        case .single(.request(let request)):
            // A method that waits is admitted once, by its task (not checked here and again).
            if case .waits = entries[request.method]?.run { return .waits }
            guard let role = policy.cachedRole(for: credentials) else { return .waits }
            let outcome: RPCReply.Outcome
            switch admit(request, credentials: credentials, role: role) {
            case .failure(let error):
                outcome = .error(error)
            case .success(let (entry, params, role)):
                switch entry.run {
                case .waits: return .waits
                case .discovery: outcome = .result(openRPCDocument)
                case .atOnce(let handler):
                    do {
                        outcome = .result(try handler(params))
                    } catch {
                        outcome = .error(rpcError(for: error, method: request.method, credentials: credentials))
                    }
                    Self.logIfStateChanging(entry.descriptor, outcome, callLogger(request, credentials: credentials, role: role))
                }
            }
            return .answered(request.id.flatMap { Self.write(RPCReply(id: $0, outcome: outcome)) })
        }
    }

    /// Answers every request of `frame` that has an id with `error` without running anything
    /// (used when a connection has too many calls in flight). `nil` when nothing is to be sent.
    public func refuse(frame: some Collection<UInt8>, with error: RPCError) -> [UInt8]? {
        refuse(RPCIncoming(parsing: frame), with: error)
    }

    /// ``refuse(frame:with:)`` for a frame already read.
    public func refuse(_ incoming: RPCIncoming, with error: RPCError) -> [UInt8]? {
        switch incoming {
        case .refused(let refusal): return Self.write(RPCReply(id: .null, outcome: .error(refusal)))
        case .single(let item): return Self.refusal(of: item, with: error).flatMap(Self.write)
        case .batch(let items):
            let replies = items.compactMap { Self.refusal(of: $0, with: error) }
            return replies.isEmpty ? nil : Self.write(replies)
        }
    }

    /// The reply to `item` refused with `error` (an invalid item keeps its own error); `nil`
    /// for a notification.
    private static func refusal(of item: RPCIncoming.Item, with error: RPCError) -> RPCReply? {
        switch item {
        case .invalid(let id, let invalid): RPCReply(id: id, outcome: .error(invalid))
        case .request(let request): request.id.map { RPCReply(id: $0, outcome: .error(error)) }
        }
    }

    private func refused(_ error: RPCError, pid: Int32) -> [UInt8]? {
        logger.debug("Refused a frame", metadata: ["client.pid": "\(pid)", "rpc.error": "\(error.message)"])
        return Self.write(RPCReply(id: .null, outcome: .error(error)))
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

    /// The method's entry, the params checked against it and the caller's role; or the error
    /// that refuses the call (unknown method, permission, params).
    private func admit(
        _ request: RPCRequest, credentials: PeerCredentials, role knownRole: AccessRole? = nil
    ) -> Result<(Entry, RPCCheckedParams, AccessRole), RPCError> {
        guard let entry = entries[request.method] else { return .failure(.methodNotFound(request.method)) }
        let role = knownRole ?? policy.role(for: credentials)
        if let refusal = policy.refusal(for: entry.descriptor, role: role, credentials: credentials) {
            var metadata: Logger.Metadata = [
                "rpc.method": "\(request.method)", "client.uid": "\(credentials.uid)",
                "client.pid": "\(credentials.pid)", "client.role": "\(role.rawValue)",
            ]
            if let user = Self.claimedUser(request) { metadata["client.claimed-user"] = "\(user)" }
            // A refused client may try again and again: a line a minute per user at most.
            refusals.note(credentials.uid) { unlogged in
                metadata["rpc.refusals.unlogged"] = "\(unlogged)"
                logger.notice("Refused a call: permission denied", metadata: metadata)
            }
            return .failure(refusal)
        }
        do {
            return .success((entry, try entry.descriptor.validate(request.params), role))
        } catch {
            return .failure(error)
        }
    }

    /// Runs one request: method lookup, access, params, handler. Returns its outcome (also
    /// for notifications, whose outcome is dropped).
    func call(_ request: RPCRequest, connection: RPCConnection) async -> RPCReply.Outcome {
        let (entry, params, role): (Entry, RPCCheckedParams, AccessRole)
        switch admit(request, credentials: connection.credentials) {
        case .failure(let error): return .error(error)
        case .success(let admitted): (entry, params, role) = admitted
        }
        let descriptor = entry.descriptor
        let callLogger = self.callLogger(request, credentials: connection.credentials, role: role)
        let outcome: RPCReply.Outcome
        do {
            switch entry.run {
            case .discovery: return .result(openRPCDocument)
            case .atOnce(let handler): outcome = .result(try handler(params))
            case .waits(let handler):
                let context = RPCContext(method: descriptor, id: request.id, connection: connection, role: role, logger: callLogger)
                outcome = .result(try await handler(params, context))
            }
        } catch {
            outcome = .error(rpcError(for: error, method: request.method, credentials: connection.credentials))
        }
        Self.logIfStateChanging(descriptor, outcome, callLogger)
        return outcome
    }

    /// A logger for one call: its method, and who made it as the kernel says (`client.uid`,
    /// `client.pid`, `client.role`), whatever its params are (named or positional). Whom the
    /// client says it calls for is beside them as a claim (`client.claimed-user`), never as
    /// the caller.
    private func callLogger(_ request: RPCRequest, credentials: PeerCredentials, role: AccessRole) -> Logger {
        var callLogger = logger
        callLogger[metadataKey: "rpc.method"] = "\(request.method)"
        callLogger[metadataKey: "client.uid"] = "\(credentials.uid)"
        callLogger[metadataKey: "client.pid"] = "\(credentials.pid)"
        callLogger[metadataKey: "client.role"] = "\(role.rawValue)"
        if let user = Self.claimedUser(request) { callLogger[metadataKey: "client.claimed-user"] = "\(user)" }
        return callLogger
    }

    /// Every call that changes state is logged, with its caller's uid, as it ends. The
    /// logger is made only then: a read answered on the event loop (`daemon.status`) makes none.
    private static func logIfStateChanging(
        _ descriptor: RPCMethodDescriptor, _ outcome: RPCReply.Outcome, _ logger: @autoclosure () -> Logger
    ) {
        guard descriptor.access == .write else { return }
        switch outcome {
        case .result: logger().info("State-changing call succeeded")
        case .error(let error): logger().info("State-changing call failed", metadata: ["rpc.error.code": "\(error.code)"])
        }
    }

    /// Whom a client says it calls for (`_meta.user`: blefleet-web's user), for the log only,
    /// as a claim: printable characters, at most 64. The call is still the connection's, with
    /// its uid and role.
    static func claimedUser(_ request: RPCRequest) -> String? {
        guard let given = request.meta?["user"]?.stringValue else { return nil }
        let printable = String(String.UnicodeScalarView(given.unicodeScalars.filter { $0.properties.generalCategory != .control }.prefix(64)))
        return printable.isEmpty ? nil : printable
    }

    /// The error a handler's `error` is answered with.
    private func rpcError(for error: any Error, method: String, credentials: PeerCredentials) -> RPCError {
        switch error {
        case let error as RPCError: return error
        case let error as any RPCErrorConvertible: return error.rpcError
        case is CancellationError: return RPCError(.shuttingDown, "The call was cancelled because the daemon is shutting down.")
        default:
            logger.error(
                "A handler failed unexpectedly",
                metadata: [
                    "rpc.method": "\(method)", "client.uid": "\(credentials.uid)", "client.pid": "\(credentials.pid)",
                    "error": "\(String(reflecting: error))",
                ])
            return .internalError
        }
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
