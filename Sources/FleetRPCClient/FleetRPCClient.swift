import FleetRPC
public import JSONRPC
import Synchronization

/// A JSON-RPC 2.0 client of `blefleetd` on its Unix socket: one JSON text per line each
/// way. Calls may run concurrently; replies are matched by id. Server notifications
/// (`events.event`) arrive on streams from ``notifications()`` or ``subscribe(topics:timeout:)``.
///
/// No event loop: a plain blocking socket and one reader thread, so a short-lived command
/// line tool starts and finishes quickly. The connection closes when the client is released
/// (and no stream from it is still being iterated) or on ``close()``.
public final class FleetRPCClient: Sendable {
    /// The default socket path of the system daemon.
    public static let defaultSocketPath = "/run/blefleet/blefleetd.sock"

    let core: ClientCore

    /// The socket path this client is connected to.
    public var socketPath: String { core.socketPath }

    /// Connects to the daemon's socket. Fails with ``FleetRPCClientError/daemonUnreachable(socketPath:errno:)``.
    public init(socketPath: String = FleetRPCClient.defaultSocketPath) throws(FleetRPCClientError) {
        let socket = try UnixSocket(connectingTo: socketPath)
        core = ClientCore(socket: socket, socketPath: socketPath)
        core.startReader()
    }

    deinit {
        core.finish(.connectionClosed(method: nil))
    }

    /// Whether the connection has ended: the daemon closed it (an idle connection is closed
    /// after its `idle-timeout-s`), or ``close()`` was called. Every later call fails.
    public var isClosed: Bool { core.isClosed }

    /// Closes the connection; waiting calls fail with ``FleetRPCClientError/connectionClosed(method:)``.
    public func close() {
        core.finish(.connectionClosed(method: nil))
    }

    /// Calls `method` with `params` (an object, an array, or `nil` for none) and returns the
    /// result as it came. `timeout` bounds the wait for the reply; `nil` waits as long as the
    /// connection lasts.
    public func call(
        _ method: String, params: JSONValue? = nil, timeout: Duration? = .seconds(30)
    ) async throws(FleetRPCClientError) -> JSONValue {
        let rpcParams: RPCParams?
        switch params {
        case nil: rpcParams = nil
        case .object(let members)?: rpcParams = .byName(members)
        case .array(let elements)?: rpcParams = .byPosition(elements)
        case let other?:
            throw .invalidParams(method: method, detail: "params must be an object or an array, not \(other.kindDescription)")
        }
        return try await send(method, params: rpcParams, as: JSONValue.self, timeout: timeout).result()
    }

    /// Calls `method` with typed `params` and returns its typed result.
    public func call<Method: RPCMethod>(
        _ method: Method.Type, _ params: Method.Params, timeout: Duration? = .seconds(30)
    ) async throws(FleetRPCClientError) -> Method.Result {
        try await reply(method, params, timeout: timeout).result()
    }

    /// Calls `method`, which takes no params, and returns its typed result.
    public func call<Method: RPCMethod>(
        _ method: Method.Type, timeout: Duration? = .seconds(30)
    ) async throws(FleetRPCClientError) -> Method.Result where Method.Params == RPCNoParams {
        try await reply(method, RPCNoParams(), timeout: timeout).result()
    }

    /// Calls `method` and returns the reply, whose result can be read typed
    /// (``FleetRPCReply/result()``) or as it came (``FleetRPCReply/json()``).
    public func reply<Method: RPCMethod>(
        _ method: Method.Type, _ params: Method.Params, timeout: Duration? = .seconds(30)
    ) async throws(FleetRPCClientError) -> FleetRPCReply<Method.Result> {
        try await send(method.name, params: params is RPCNoParams ? nil : params, as: Method.Result.self, timeout: timeout)
    }

    /// Sends one request (params encoded as they are) and waits for its reply frame.
    private func send<Params: Encodable, Result: Decodable>(
        _ method: String, params: Params?, as: Result.Type, timeout: Duration?
    ) async throws(FleetRPCClientError) -> FleetRPCReply<Result> {
        let core = self.core
        let id = core.makeID()
        let frame: [UInt8]
        do {
            frame = try JSONCodec.encode(RPCOutgoing(method: method, params: params, id: .int(id)))
        } catch {
            throw .invalidParams(method: method, detail: "\(error)")
        }
        let timer = CallTimer()
        let reply: ClientCore.Reply = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                core.register(id, method: method, continuation: continuation)
                if Task.isCancelled {
                    core.resolve(id, with: .failure(.cancelled(method: method)))
                    return
                }
                if !core.send(frame) {
                    core.resolve(id, with: .failure(.connectionClosed(method: method)))
                    return
                }
                if let timeout {
                    timer.start {
                        guard (try? await Task.sleep(for: timeout)) != nil else { return }
                        core.resolve(id, with: .failure(.timeout(method: method, seconds: timeout.seconds)))
                    }
                }
            }
        } onCancel: {
            core.resolve(id, with: .failure(.cancelled(method: method)))
        }
        timer.cancel()
        return FleetRPCReply(method: method, frame: try reply.get())
    }

    /// Every notification the daemon sends on this connection from now on. The stream ends
    /// with a ``FleetRPCClientError`` when the connection does; iterating it keeps the
    /// connection open.
    public func notifications() -> AsyncThrowingStream<FleetRPCNotification, any Error> {
        let (stream, continuation) = AsyncThrowingStream<FleetRPCNotification, any Error>.makeStream()
        if let key = core.addListener(continuation) {
            continuation.onTermination = { [self] _ in
                // Holding `self` keeps the connection open while the stream is in use.
                self.core.removeListener(key)
            }
        }
        return stream
    }
}

/// The task that fails a call when its time is up; cancelled as soon as the reply is in,
/// so no sleeping task outlives its call.
final class CallTimer: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)

    func start(_ body: @escaping @Sendable () async -> Void) {
        task.withLock { $0 = Task { await body() } }
    }

    func cancel() {
        task.withLock { $0?.cancel() }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
