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

    private struct Entry: Sendable {
        var descriptor: RPCMethodDescriptor
        var handler: Handler
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
            let decoded: Params
            do {
                decoded = try JSONDecoder().decode(Params.self, from: Data(JSONValue.object(named).serialized()))
            } catch {
                throw RPCError.invalidParams(JSONRPCDispatcher.describe(error))
            }
            return try JSONRPCDispatcher.encode(try await handler(decoded, context))
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

    // MARK: Dispatch

    /// Answers one frame (without its newline). `nil` when nothing is to be sent (notifications only).
    public func handle(frame: some Collection<UInt8>, connection: RPCConnection) async -> [UInt8]? {
        switch RPCIncoming(parsing: frame, maxDepth: maxDepth) {
        case .refused(let error):
            logger.debug("Refused a frame", metadata: ["client.pid": "\(connection.credentials.pid)", "rpc.error": "\(error.message)"])
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
        switch RPCIncoming(parsing: frame, maxDepth: maxDepth) {
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

    /// Runs one request and returns its outcome (also for notifications, whose outcome is dropped).
    public func call(_ request: RPCRequest, connection: RPCConnection) async -> RPCResponse.Outcome {
        let isDiscover = request.method == FleetMethods.rpcDiscover.name
        guard let descriptor = isDiscover ? FleetMethods.rpcDiscover : entries[request.method]?.descriptor else {
            return .error(.methodNotFound(request.method))
        }
        var callLogger = logger
        callLogger[metadataKey: "rpc.method"] = "\(request.method)"
        callLogger[metadataKey: "client.uid"] = "\(connection.credentials.uid)"
        callLogger[metadataKey: "client.pid"] = "\(connection.credentials.pid)"

        let role = policy.role(for: connection.credentials)
        if let refusal = policy.refusal(for: descriptor, role: role, credentials: connection.credentials) {
            callLogger.notice("Refused a call: permission denied", metadata: ["client.role": "\(role.rawValue)"])
            return .error(refusal)
        }
        let params: [String: JSONValue]
        do {
            params = try descriptor.validate(request.params)
        } catch {
            return .error(error)
        }
        if isDiscover { return .result(openRPCDocument) }

        let context = RPCContext(method: descriptor, id: request.id, connection: connection, role: role, logger: callLogger)
        let outcome: RPCResponse.Outcome
        do {
            outcome = .result(try await entries[request.method]!.handler(params, context))
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

    // MARK: Helpers

    static func encode(_ value: some Encodable) throws -> JSONValue {
        if let json = value as? JSONValue { return json }
        let encoder = JSONEncoder()
        let data = try encoder.encode(value)
        return try JSONValue(parsing: data, maxDepth: 512)
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
