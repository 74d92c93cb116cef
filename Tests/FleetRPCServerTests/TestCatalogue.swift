import FleetRPC
import JSONRPC
import FleetRPCServer
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOPosix

/// Toy methods for the protocol layer, named after the JSON-RPC 2.0 specification's examples.
enum TestCatalogue {
    static let subtract = RPCMethodDescriptor(
        name: "test.subtract", summary: "minuend - subtrahend",
        params: [
            RPCParamDescriptor("minuend", .integer(), required: true, "Left."),
            RPCParamDescriptor("subtrahend", .integer(), required: true, "Right."),
        ],
        result: RPCResultDescriptor("difference", "The difference."), access: .read)
    static let sum = RPCMethodDescriptor(
        name: "test.sum", summary: "a + b + c",
        params: ["a", "b", "c"].map { RPCParamDescriptor($0, .integer(), "A term.") },
        result: RPCResultDescriptor("sum", "The sum."), access: .read)
    static let update = RPCMethodDescriptor(
        name: "test.update", summary: "Changes nothing, pretends to.",
        params: ["a", "b", "c", "d", "e"].map { RPCParamDescriptor($0, .any, "Anything.") },
        result: RPCResultDescriptor("ok", "true"), access: .write)
    static let notifyHello = RPCMethodDescriptor(
        name: "test.notify_hello", summary: "Hello.", params: [RPCParamDescriptor("value", .integer(), "A number.")],
        result: RPCResultDescriptor("ok", "true"), access: .write)
    static let getData = RPCMethodDescriptor(
        name: "test.get_data", summary: "Some data.", result: RPCResultDescriptor("data", "[\"hello\", 5]"), access: .read)
    static let failInternal = RPCMethodDescriptor(
        name: "test.fail_internal", summary: "Throws an unexpected error.", result: RPCResultDescriptor("never", ""),
        access: .read)
    static let failRPC = RPCMethodDescriptor(
        name: "test.fail_rpc", summary: "Throws a timeout.", result: RPCResultDescriptor("never", ""), access: .read,
        errors: [.timeout])
    static let failConvertible = RPCMethodDescriptor(
        name: "test.fail_convertible", summary: "Throws an RPCErrorConvertible.", result: RPCResultDescriptor("never", ""),
        access: .read, errors: [.boardNotFound])
    static let typed = RPCMethodDescriptor(
        name: "test.typed", summary: "Typed params and result.",
        params: [
            RPCParamDescriptor("select", .selection, required: true, "Boards."),
            RPCParamDescriptor("on", .boolean, required: true, "On."),
        ],
        result: RPCResultDescriptor("outcome", "An outcome."), access: .write)
    static let wait = RPCMethodDescriptor(
        name: "test.wait", summary: "Returns when test.open opens the same key.",
        params: [RPCParamDescriptor("key", .string(), required: true, "Key.")],
        result: RPCResultDescriptor("key", "The key."), access: .read)
    static let open = RPCMethodDescriptor(
        name: "test.open", summary: "Opens a key.", params: [RPCParamDescriptor("key", .string(), required: true, "Key.")],
        result: RPCResultDescriptor("ok", "true"), access: .read)
    static let snapshot = RPCMethodDescriptor(
        name: "test.snapshot", summary: "Answered at once, on the event loop (as daemon.status is).",
        params: [RPCParamDescriptor("fail", .boolean, "Throw instead.")],
        result: RPCResultDescriptor("onEventLoop", "Whether it ran on an NIO event loop's thread."), access: .read)
    static let flood = RPCMethodDescriptor(
        name: "test.flood", summary: "Sends count notifications, stops when refused.",
        params: [RPCParamDescriptor("count", .integer(minimum: 0), required: true, "How many.")],
        result: RPCResultDescriptor("sent", "How many were queued."), access: .read)

    static let hold = RPCMethodDescriptor(
        name: "test.hold", summary: "Keeps something for the connection until it closes, as a subscription does.",
        result: RPCResultDescriptor("ok", "true"), access: .read)

    /// A typed method over `typed`, as the fleet's methods are.
    enum Typed: RPCMethod {
        static let descriptor = typed
        typealias Params = FleetMethods.LedSet.Params
        typealias Result = FleetResult<Done>
    }

    struct SecretFailure: Error, CustomStringConvertible {
        var description: String { "secret-internal-detail /etc/shadow" }
    }

    struct MissingBoard: RPCErrorConvertible {
        var rpcError: RPCError { RPCError(.boardNotFound, "No board matches \"lab-9\".") }
    }

    /// Methods that never block: safe for fuzzing.
    static func makeDispatcher(policy: AccessPolicy = AccessPolicy(), logger: Logger = .silent) -> JSONRPCDispatcher {
        var dispatcher = JSONRPCDispatcher(policy: policy, logger: logger)
        dispatcher.registerDiscovery(FleetMethods.Discover.self, title: "test", version: BlefleetVersion.current)
        dispatcher.registerJSON(subtract) { params, _ in
            .int(params["minuend"]!.int64Value! &- params["subtrahend"]!.int64Value!)
        }
        dispatcher.registerJSON(sum) { params, _ in
            .int(params.values.values.reduce(0) { $0 &+ ($1.int64Value ?? 0) })
        }
        dispatcher.registerJSON(update) { _, _ in true }
        dispatcher.registerJSON(notifyHello) { _, _ in true }
        dispatcher.registerJSON(getData) { _, _ in ["hello", 5] }
        dispatcher.registerJSON(failInternal) { _, _ in throw SecretFailure() }
        dispatcher.registerJSON(failRPC) { _, _ in throw RPCError(.timeout, "The board did not answer within 5 s.") }
        dispatcher.registerJSON(failConvertible) { _, _ in throw MissingBoard() }
        dispatcher.register(immediate: snapshot) { params in
            if params["fail"] == true { throw MissingBoard() }
            return JSONValue.bool(MultiThreadedEventLoopGroup.currentEventLoop != nil)
        }
        dispatcher.register(Typed.self) { params, _ in
            FleetResult(outcomes: [
                BoardOutcome(
                    address: BoardAddress("AA:BB:CC:DD:EE:01")!, name: "\(params.select)",
                    result: params.on ? .success(Done()) : .failure(FleetError(.failed, "off")), latency: .milliseconds(1))
            ])
        }
        return dispatcher
    }

    /// The non-blocking methods plus test.wait/test.open (on `gate`) and test.flood (which
    /// records how many notifications were queued in `flooded`).
    static func makeServerDispatcher(
        gate: Gate, flooded: NIOLockedValueBox<Int>? = nil, policy: AccessPolicy = AccessPolicy(), logger: Logger = .silent
    ) -> JSONRPCDispatcher {
        var dispatcher = makeDispatcher(policy: policy, logger: logger)
        dispatcher.registerJSON(wait) { params, _ in
            let key = params["key"]!.stringValue!
            try await gate.wait(key)
            return .string(key)
        }
        dispatcher.registerJSON(hold) { _, context in
            context.connection.onClose {}
            return true
        }
        dispatcher.registerJSON(open) { params, _ in
            gate.open(params["key"]!.stringValue!)
            return true
        }
        dispatcher.registerJSON(flood) { params, context in
            var sent = 0
            let payload = JSONValue.string(String(repeating: "x", count: 200))
            for _ in 0..<params["count"]!.int64Value! {
                guard context.connection.notify(method: "test.flooded", params: ["p": payload]) else { break }
                sent += 1
            }
            flooded?.withLockedValue { $0 = sent }
            return .int(Int64(sent))
        }
        return dispatcher
    }
}

/// Keys that calls wait on until opened. Waiting honours cancellation.
final class Gate: Sendable {
    private struct State {
        var opened: Set<String> = []
        var waiters: [String: [CheckedContinuation<Void, any Error>]] = [:]
    }

    private let state = NIOLockedValueBox(State())

    func open(_ key: String) {
        let waiters = state.withLockedValue { state in
            state.opened.insert(key)
            return state.waiters.removeValue(forKey: key) ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether a call is waiting on `key`.
    func waiting(_ key: String) -> Bool {
        state.withLockedValue { !($0.waiters[key] ?? []).isEmpty }
    }

    func wait(_ key: String) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLockedValue { state -> Bool in
                    if state.opened.contains(key) || Task.isCancelled { return true }
                    state.waiters[key, default: []].append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
            try Task.checkCancellation()
        } onCancel: {
            let waiters = state.withLockedValue { state in state.waiters.removeValue(forKey: key) ?? [] }
            for waiter in waiters { waiter.resume(throwing: CancellationError()) }
        }
    }
}

extension Logger {
    static let silent = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// Collects log records so tests can check what was logged.
final class LogCapture: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let records = NIOLockedValueBox<[Record]>([])

    var all: [Record] { records.withLockedValue { $0 } }

    var logger: Logger {
        Logger(label: "capture", factory: { _ in Handler(capture: self) })
    }

    fileprivate func append(_ record: Record) {
        records.withLockedValue { $0.append(record) }
    }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            merged.merge(event.metadata ?? [:]) { _, new in new }
            capture.append(
                Record(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }
    }
}

/// A connection for dispatcher tests: root's credentials unless told otherwise; frames sent
/// to it (notifications) are collected.
func makeConnection(uid: UInt32 = 0, gid: UInt32 = 0) -> (RPCConnection, NIOLockedValueBox<[[UInt8]]>) {
    let sent = NIOLockedValueBox<[[UInt8]]>([])
    let connection = RPCConnection(id: 1, credentials: PeerCredentials(pid: getpid(), uid: uid, gid: gid)) { frame in
        sent.withLockedValue { $0.append(frame) }
        return true
    }
    return (connection, sent)
}

extension JSONRPCDispatcher {
    /// Serves `descriptor` with a handler returning a JSON value (the toy methods).
    mutating func registerJSON(
        _ descriptor: RPCMethodDescriptor,
        handler: @escaping @Sendable (RPCCheckedParams, RPCContext) async throws -> JSONValue
    ) {
        register(descriptor) { params, context in try await handler(params, context) }
    }
}
