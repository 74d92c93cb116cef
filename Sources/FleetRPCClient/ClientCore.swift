import FleetRPC
import JSONRPC
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The shared state of one connection: the socket, the calls waiting for replies, and the
/// notification listeners. The reader thread and callers meet here, under one mutex.
final class ClientCore: Sendable {
    /// A reply frame (its result read by the caller, with the type it expects), or why none came.
    typealias Reply = Result<[UInt8], FleetRPCClientError>

    struct Pending {
        var method: String
        var continuation: UnsafeContinuation<Reply, Never>
    }

    struct State {
        var nextID: Int64 = 1
        var pending: [Int64: Pending] = [:]
        var listeners: [Int: AsyncThrowingStream<FleetRPCNotification, any Error>.Continuation] = [:]
        var nextListener = 0
        /// Set once the connection has ended; every later call fails with it.
        var closed: FleetRPCClientError?
    }

    /// The longest reply line accepted; a longer one is a malformed reply.
    static let maximumFrameBytes = 64 << 20

    let socket: UnixSocket
    let socketPath: String
    private let state = Mutex(State())
    private let writeLock = Mutex(())

    init(socket: UnixSocket, socketPath: String) {
        self.socket = socket
        self.socketPath = socketPath
    }

    /// Whether the connection has ended (the daemon closed it, or ``finish(_:)`` was called).
    var isClosed: Bool { state.withLock { $0.closed != nil } }

    func makeID() -> Int64 {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// Records a call waiting for its reply, or answers at once if the connection has ended.
    func register(_ id: Int64, method: String, continuation: UnsafeContinuation<Reply, Never>) {
        let closed = state.withLock { state -> FleetRPCClientError? in
            if let closed = state.closed { return closed }
            state.pending[id] = Pending(method: method, continuation: continuation)
            return nil
        }
        if let closed { continuation.resume(returning: .failure(Self.forCall(closed, method: method))) }
    }

    /// Answers a waiting call (no-op if it was answered already).
    func resolve(_ id: Int64, with reply: Reply) {
        let pending = state.withLock { $0.pending.removeValue(forKey: id) }
        pending?.continuation.resume(returning: reply)
    }

    func method(of id: Int64) -> String? {
        state.withLock { $0.pending[id]?.method }
    }

    /// Sends one frame followed by a newline; `false` when the connection is gone.
    func send(_ frame: [UInt8]) -> Bool {
        var line = frame
        line.append(UInt8(ascii: "\n"))
        return writeLock.withLock { _ in socket.send(line) }
    }

    func addListener(_ continuation: AsyncThrowingStream<FleetRPCNotification, any Error>.Continuation) -> Int? {
        let added = state.withLock { state -> Result<Int, FleetRPCClientError> in
            if let closed = state.closed { return .failure(closed) }
            let key = state.nextListener
            state.nextListener += 1
            state.listeners[key] = continuation
            return .success(key)
        }
        switch added {
        case .success(let key):
            return key
        case .failure(let closed):
            continuation.finish(throwing: closed)
            return nil
        }
    }

    func removeListener(_ key: Int) {
        _ = state.withLock { $0.listeners.removeValue(forKey: key) }
    }

    /// Ends the connection: every waiting call and listener gets `reason`.
    func finish(_ reason: FleetRPCClientError) {
        let (pending, listeners) = state.withLock { state in
            if state.closed == nil { state.closed = reason }
            defer {
                state.pending = [:]
                state.listeners = [:]
            }
            return (state.pending, state.listeners)
        }
        socket.shutdownBoth()
        for (_, call) in pending {
            call.continuation.resume(returning: .failure(Self.forCall(reason, method: call.method)))
        }
        for (_, listener) in listeners {
            listener.finish(throwing: reason)
        }
    }

    /// `reason` as seen by one call (a closed connection names the call's method).
    static func forCall(_ reason: FleetRPCClientError, method: String) -> FleetRPCClientError {
        if case .connectionClosed = reason { return .connectionClosed(method: method) }
        return reason
    }

    // MARK: Reader

    /// Starts the thread that reads replies and notifications until the connection ends.
    func startReader() {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            let core = Unmanaged<ClientCore>.fromOpaque(raw!).takeRetainedValue()
            core.readLoop()
            return nil
        }, context)
        if result == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<ClientCore>.fromOpaque(context).release()
            finish(.connectionClosed(method: nil))
        }
    }

    private func readLoop() {
        var buffered: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let count = socket.receive(into: chunk)
            guard count > 0 else { break }
            buffered.append(contentsOf: chunk[..<count])
            var start = 0
            while let newline = buffered[start...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = newline
                if end > start, buffered[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let frame = buffered[start..<end]
                start = newline + 1
                if frame.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
                if let failure = handle(frame: frame) {
                    finish(failure)
                    return
                }
            }
            buffered.removeFirst(start)
            if buffered.count > Self.maximumFrameBytes {
                finish(.malformedReply(detail: "a line longer than \(Self.maximumFrameBytes) bytes"))
                return
            }
        }
        finish(.connectionClosed(method: nil))
    }

    /// Handles one frame from the daemon; returns an error when the connection must end.
    /// Only the envelope is read here; the caller reads the result with its own type.
    func handle(frame: ArraySlice<UInt8>) -> FleetRPCClientError? {
        let message: RPCServerMessage
        do {
            message = try RPCServerMessage(parsing: frame)
        } catch {
            return .malformedReply(detail: JSONCodec.describe(error))
        }
        switch message {
        case .response(let id, let error):
            return deliver(Array(frame), id: id, error: error)
        case .batch:
            return .malformedReply(detail: "a batch reply, but this client sends no batch")
        case .notification(let method):
            let notification = FleetRPCNotification(method: method, frame: Array(frame))
            let listeners = state.withLock { Array($0.listeners.values) }
            for listener in listeners { listener.yield(notification) }
            return nil
        }
    }

    private func deliver(_ frame: [UInt8], id replyID: RPCID, error: RPCError?) -> FleetRPCClientError? {
        guard case .int(let id) = replyID else {
            if replyID == .null, let error {
                // The daemon could not read a frame of ours (e.g. too large): it closes the
                // connection after this, so every waiting call gets the error.
                return .rpcError(method: "a request", code: error.code, message: error.message, data: error.data)
            }
            return .malformedReply(detail: "a reply with the id \(replyID), which no call of this client used")
        }
        guard let method = method(of: id) else {
            if id < 1 || id >= state.withLock({ $0.nextID }) {
                return .malformedReply(detail: "a reply with the id \(id), which no call of this client used")
            }
            // A late reply to a call that timed out or was cancelled: nothing waits for it.
            return nil
        }
        if let error {
            resolve(id, with: .failure(Self.map(error, method: method)))
        } else {
            resolve(id, with: .success(frame))
        }
        return nil
    }

    static func map(_ error: RPCError, method: String) -> FleetRPCClientError {
        if error.code == RPCErrorCode.permissionDenied.rawValue {
            return .permissionDenied(method: method, message: error.message)
        }
        return .rpcError(method: method, code: error.code, message: error.message, data: error.data)
    }
}
