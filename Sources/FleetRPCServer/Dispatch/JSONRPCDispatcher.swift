public import FleetRPC
import Foundation
public import Logging

/// The JSON-RPC 2.0 protocol engine, independent of sockets: a frame in, the bytes to reply
/// with out (or nothing, for notifications). It validates requests and params against the
/// method descriptors, applies the ``AccessPolicy``, runs handlers, maps their errors to
/// codes, and answers `rpc.discover` with the OpenRPC document of the registered methods.
public struct JSONRPCDispatcher: Sendable {
    /// A handler: params checked against the descriptor and given by name (absent optional
    /// ones left out); returns the result. Throw ``RPCError`` or an ``RPCErrorConvertible``.
    public typealias Handler = @Sendable (_ params: [String: JSONValue], _ context: RPCContext) async throws -> JSONValue
    /// A handler that answers at once, without awaiting anything (e.g. `daemon.status`): the
    /// server runs it where the frame was read, with no hand-off to another thread.
    public typealias ImmediateHandler = @Sendable (_ params: [String: JSONValue], _ context: RPCContext) throws -> JSONValue

    private struct Entry: Sendable {
        var descriptor: RPCMethodDescriptor
        var handler: Handler
        var immediate: ImmediateHandler?
    }

    /// A frame's requests, parsed, that need handlers which await (see ``prepare(frame:connection:)``).
    public struct Work: Sendable {
        fileprivate let incoming: RPCIncoming
    }

    /// What a frame needs: a reply known at once (`nil`: nothing to send), or work to run.
    public enum Prepared: Sendable {
        case reply([UInt8]?)
        case work(Work)
    }

    private var entries: [String: Entry] = [:]
    private var order: [String] = []
    public let policy: AccessPolicy
    public let maxDepth: Int
    private let logger: Logger

    /// - Parameters:
    ///   - maxDepth: frames nested deeper are refused with `-32700` (never a stack overflow).
    public init(policy: AccessPolicy, logger: Logger, maxDepth: Int = JSONValue.defaultMaxDepth) {
        self.policy = policy
        self.logger = logger
        self.maxDepth = maxDepth
    }

    /// The descriptors of the methods served, `rpc.discover` included, in registration order.
    public var methods: [RPCMethodDescriptor] {
        order.map { entries[$0]!.descriptor } + [FleetMethods.rpcDiscover]
    }

    /// The OpenRPC document `rpc.discover` returns.
    public var openRPCDocument: JSONValue {
        OpenRPCDocument.make(methods: order.map { entries[$0]!.descriptor })
    }

    // MARK: Registration

    /// Serves `descriptor.name` with `handler`. Registering a name twice is a programming error.
    public mutating func register(_ descriptor: RPCMethodDescriptor, handler: @escaping Handler) {
        precondition(entries[descriptor.name] == nil, "\(descriptor.name) is registered twice")
        precondition(descriptor.name != FleetMethods.rpcDiscover.name, "rpc.discover is built in")
        entries[descriptor.name] = Entry(descriptor: descriptor, handler: handler)
        order.append(descriptor.name)
    }

    /// Serves `descriptor.name` with a handler taking typed params decoded from the checked params.
    public mutating func register<Params: Decodable & Sendable, Result: Encodable & Sendable>(
        _ descriptor: RPCMethodDescriptor, params: Params.Type,
        handler: @escaping @Sendable (Params, RPCContext) async throws -> Result
    ) {
        register(descriptor) { named, context in
            try JSONRPCDispatcher.encode(try await handler(try JSONRPCDispatcher.decode(Params.self, from: named), context))
        }
    }

    /// Serves `descriptor.name` (a method without params) with a handler returning a typed result.
    public mutating func register<Result: Encodable & Sendable>(
        _ descriptor: RPCMethodDescriptor, handler: @escaping @Sendable (RPCContext) async throws -> Result
    ) {
        register(descriptor) { _, context in
            try JSONRPCDispatcher.encode(try await handler(context))
        }
    }

    /// Serves `descriptor.name` with a handler that answers at once (it must not block).
    public mutating func registerImmediate(_ descriptor: RPCMethodDescriptor, handler: @escaping ImmediateHandler) {
        register(descriptor) { params, context in try handler(params, context) }
        entries[descriptor.name]?.immediate = handler
    }

    /// Serves `descriptor.name` (a method without params) with a handler that answers at once.
    public mutating func registerImmediate<Result: Encodable & Sendable>(
        _ descriptor: RPCMethodDescriptor, handler: @escaping @Sendable (RPCContext) throws -> Result
    ) {
        registerImmediate(descriptor) { _, context in try JSONRPCDispatcher.encode(try handler(context)) }
    }

    /// Serves `descriptor.name` with a handler taking typed params that answers at once.
    public mutating func registerImmediate<Params: Decodable & Sendable, Result: Encodable & Sendable>(
        _ descriptor: RPCMethodDescriptor, params: Params.Type,
        handler: @escaping @Sendable (Params, RPCContext) throws -> Result
    ) {
        registerImmediate(descriptor) { named, context in
            try JSONRPCDispatcher.encode(try handler(try JSONRPCDispatcher.decode(Params.self, from: named), context))
        }
    }

    // MARK: Dispatch

    /// Answers one frame (without its newline). `nil` when nothing is to be sent (notifications only).
    public func handle(frame: some Collection<UInt8>, connection: RPCConnection) async -> [UInt8]? {
        switch prepare(frame: frame, connection: connection) {
        case .reply(let reply): return reply
        case .work(let work): return await perform(work, connection: connection)
        }
    }

    /// Parses a frame and answers at once what needs no waiting: malformed frames, invalid
    /// requests, unknown methods, refusals, `rpc.discover` and immediate handlers. A frame
    /// with any other call (in a batch: any at all) becomes ``Work`` for ``perform(_:connection:)``.
    public func prepare(frame: some Collection<UInt8>, connection: RPCConnection) -> Prepared {
        let incoming = RPCIncoming(parsing: frame, maxDepth: maxDepth)
        switch incoming {
        case .refused(let error):
            logger.debug("Refused a frame", metadata: ["client.pid": "\(connection.credentials.pid)", "rpc.error": "\(error.message)"])
            return .reply(RPCResponse(id: .null, error: error).serialized())
        case .single(let item):
            guard let response = immediateResponse(item, connection: connection) else { return .work(Work(incoming: incoming)) }
            return .reply(response?.serialized())
        case .batch(let items):
            let waits = items.contains { item in
                if case .request(let request) = item { return !canAnswerAtOnce(request) }
                return false
            }
            if waits { return .work(Work(incoming: incoming)) }
            let responses = items.compactMap { immediateResponse($0, connection: connection) ?? nil }
            return .reply(responses.isEmpty ? nil : RPCResponse.serializeBatch(responses))
        }
    }

    /// Runs what ``prepare(frame:connection:)`` could not answer at once; the reply to send, if any.
    public func perform(_ work: Work, connection: RPCConnection) async -> [UInt8]? {
        switch work.incoming {
        case .refused(let error):
            return RPCResponse(id: .null, error: error).serialized()
        case .single(let item):
            return await handle(item, connection: connection)?.serialized()
        case .batch(let items):
            let responses = await withTaskGroup(of: (Int, RPCResponse?).self) { group in
                for (position, item) in items.enumerated() {
                    group.addTask { (position, await self.handle(item, connection: connection)) }
                }
                var collected: [(Int, RPCResponse)] = []
                for await (position, response) in group {
                    if let response { collected.append((position, response)) }
                }
                return collected.sorted { $0.0 < $1.0 }.map(\.1)
            }
            return responses.isEmpty ? nil : RPCResponse.serializeBatch(responses)
        }
    }

    /// Answers every request of `frame` that has an id with `error` without running anything
    /// (used when a connection has too many calls in flight). `nil` when nothing is to be sent.
    public func refuse(frame: some Collection<UInt8>, with error: RPCError) -> [UInt8]? {
        refuse(Work(incoming: RPCIncoming(parsing: frame, maxDepth: maxDepth)), with: error)
    }

    /// Answers every request of `work` that has an id with `error` without running anything.
    public func refuse(_ work: Work, with error: RPCError) -> [UInt8]? {
        switch work.incoming {
        case .refused(let refusal):
            return RPCResponse(id: .null, error: refusal).serialized()
        case .single(let item):
            return refusal(item, error)?.serialized()
        case .batch(let items):
            let responses = items.compactMap { refusal($0, error) }
            return responses.isEmpty ? nil : RPCResponse.serializeBatch(responses)
        }
    }

    private func refusal(_ item: RPCIncoming.Item, _ error: RPCError) -> RPCResponse? {
        switch item {
        case .invalid(let id, let invalid): return RPCResponse(id: id, error: invalid)
        case .request(let request): return request.id.map { RPCResponse(id: $0, error: error) }
        }
    }

    private func handle(_ item: RPCIncoming.Item, connection: RPCConnection) async -> RPCResponse? {
        switch item {
        case .invalid(let id, let error):
            return RPCResponse(id: id, error: error)
        case .request(let request):
            let outcome = await call(request, connection: connection)
            guard let id = request.id else { return nil }
            return RPCResponse(id: id, outcome: outcome)
        }
    }

    /// Whether a request is answered without awaiting: unknown methods, `rpc.discover`, immediate handlers.
    private func canAnswerAtOnce(_ request: RPCRequest) -> Bool {
        guard let entry = entries[request.method] else { return true }
        return entry.immediate != nil
    }

    /// The response to an item that can be answered at once (`.some(nil)` for a notification),
    /// or `nil` when it needs ``call(_:connection:)``.
    private func immediateResponse(_ item: RPCIncoming.Item, connection: RPCConnection) -> RPCResponse?? {
        switch item {
        case .invalid(let id, let error):
            return .some(RPCResponse(id: id, error: error))
        case .request(let request):
            guard canAnswerAtOnce(request) else { return nil }
            let outcome: RPCResponse.Outcome
            switch preflight(request, connection: connection) {
            case .done(let done):
                outcome = done
            case .run(let entry, let params, let context):
                guard let immediate = entry.immediate else { return nil }
                do {
                    outcome = conclude(.success(try immediate(params, context)), context: context)
                } catch {
                    outcome = conclude(.failure(error), context: context)
                }
            }
            guard let id = request.id else { return .some(nil) }
            return .some(RPCResponse(id: id, outcome: outcome))
        }
    }

    private enum Preflight {
        case done(RPCResponse.Outcome)
        case run(Entry, [String: JSONValue], RPCContext)
    }

    /// Everything before the handler: method lookup, access, params.
    private func preflight(_ request: RPCRequest, connection: RPCConnection) -> Preflight {
        let isDiscover = request.method == FleetMethods.rpcDiscover.name
        guard let descriptor = isDiscover ? FleetMethods.rpcDiscover : entries[request.method]?.descriptor else {
            return .done(.error(.methodNotFound(request.method)))
        }
        var callLogger = logger
        callLogger[metadataKey: "rpc.method"] = "\(request.method)"
        callLogger[metadataKey: "client.uid"] = "\(connection.credentials.uid)"
        callLogger[metadataKey: "client.pid"] = "\(connection.credentials.pid)"

        let role = policy.role(for: connection.credentials)
        if let refusal = policy.refusal(for: descriptor, role: role, credentials: connection.credentials) {
            callLogger.notice("Refused a call: permission denied", metadata: ["client.role": "\(role.rawValue)"])
            return .done(.error(refusal))
        }
        let params: [String: JSONValue]
        do {
            params = try descriptor.validate(request.params)
        } catch {
            return .done(.error(error))
        }
        if isDiscover { return .done(.result(openRPCDocument)) }
        let context = RPCContext(method: descriptor, id: request.id, connection: connection, role: role, logger: callLogger)
        return .run(entries[request.method]!, params, context)
    }

    /// Runs one request and returns its outcome (also for notifications, whose outcome is dropped).
    public func call(_ request: RPCRequest, connection: RPCConnection) async -> RPCResponse.Outcome {
        switch preflight(request, connection: connection) {
        case .done(let outcome):
            return outcome
        case .run(let entry, let params, let context):
            do {
                return conclude(.success(try await entry.handler(params, context)), context: context)
            } catch {
                return conclude(.failure(error), context: context)
            }
        }
    }

    /// A handler's result or error as an outcome, logged when the call changes state.
    private func conclude(_ result: Result<JSONValue, any Error>, context: RPCContext) -> RPCResponse.Outcome {
        let callLogger = context.logger
        let outcome: RPCResponse.Outcome
        switch result {
        case .success(let value):
            outcome = .result(value)
        case .failure(let error as RPCError):
            outcome = .error(error)
        case .failure(let error as any RPCErrorConvertible):
            outcome = .error(error.rpcError)
        case .failure(is CancellationError):
            outcome = .error(RPCError(.shuttingDown, "The call was cancelled because the daemon is shutting down."))
        case .failure(let error):
            callLogger.error("A handler failed unexpectedly", metadata: ["error": "\(String(reflecting: error))"])
            outcome = .error(.internalError)
        }
        if context.method.access == .write {
            switch outcome {
            case .result: callLogger.info("State-changing call succeeded")
            case .error(let error): callLogger.info("State-changing call failed", metadata: ["rpc.error.code": "\(error.code)"])
            }
        }
        return outcome
    }

    // MARK: Helpers

    static func decode<Params: Decodable>(_ type: Params.Type, from named: [String: JSONValue]) throws -> Params {
        do {
            return try JSONDecoder().decode(Params.self, from: Data(JSONValue.object(named).serialized()))
        } catch {
            throw RPCError.invalidParams(JSONRPCDispatcher.describe(error))
        }
    }

    static func encode(_ value: some Encodable) throws -> JSONValue {
        try JSONValueEncoder().encode(value)
    }

    /// A decoding error as a sentence naming the parameter, without Swift type names.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "the params could not be read" }
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "params" : "\"" + names.joined(separator: ".") + "\""
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        case .keyNotFound(let key, _):
            return "missing required parameter \"\(key.stringValue)\""
        @unknown default:
            return "the params could not be read"
        }
    }
}
