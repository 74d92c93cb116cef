import FleetRPC
import JSONRPC
import NIOConcurrencyHelpers

/// One client connection as handlers see it: who is calling, and a way to send
/// server→client notifications (events) on the same connection.
///
/// Notifications are queued with a bound; a client that does not read its socket until the
/// queue overflows is disconnected rather than buffered forever. Streams of values (events,
/// notifications of characteristics) wait for room instead (``waitForRoom()``), losing their
/// oldest values in their own bounded buffers: a slow reader loses values before it loses its
/// connection.
public final class RPCConnection: Sendable {
    /// Unique per server run; use it to key per-connection state such as subscriptions.
    public let id: UInt64
    public let credentials: PeerCredentials
    /// Frames queued for the client (notifications) past which it is disconnected.
    public let queueLimit: Int

    private struct State {
        var closed = false
        var inputEnded = false
        var closeActions: [@Sendable () -> Void] = []
        var inputEndActions: [@Sendable () -> Void] = []
        /// Frames queued and not written yet (``frameWritten()``).
        var queued = 0
        var nextWaiter: UInt64 = 0
        var roomWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = NIOLockedValueBox(State())
    private let sink: @Sendable ([UInt8]) -> Bool

    /// A connection whose frames go to `send`, which returns `false` when the frame could not
    /// be queued (the connection is then treated as closed), and which disconnects its client
    /// when `queueLimit` frames are queued. The server makes these; tests may too.
    public init(
        id: UInt64, credentials: PeerCredentials, queueLimit: Int = 1024, send: @escaping @Sendable ([UInt8]) -> Bool
    ) {
        self.id = id
        self.credentials = credentials
        self.queueLimit = max(2, queueLimit)
        self.sink = send
    }

    /// Whether the connection has closed.
    public var isClosed: Bool { state.withLockedValue { $0.closed } }

    /// Whether the client's input has ended (it left, or half-closed): the connection closes
    /// as soon as its calls have answered, so nothing it asks to keep outlives them.
    public var inputHasEnded: Bool { state.withLockedValue { $0.inputEnded || $0.closed } }

    /// Runs `action` once when the client's input ends or the connection closes, whichever
    /// comes first (at once if one has): work only an open connection can use (a connect for
    /// a lease) stops then, not when its calls have answered.
    public func onInputEnd(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLockedValue { state -> Bool in
            if state.inputEnded || state.closed { return true }
            state.inputEndActions.append(action)
            return false
        }
        if runNow { action() }
    }

    /// The client's input ended (the server read its end).
    func markInputEnded() {
        let actions = state.withLockedValue { state -> [@Sendable () -> Void] in
            guard !state.inputEnded else { return [] }
            state.inputEnded = true
            defer { state.inputEndActions = [] }
            return state.inputEndActions
        }
        for action in actions { action() }
    }

    /// Frames queued for the client and not written yet.
    public var queuedFrames: Int { state.withLockedValue { $0.queued } }

    /// Returns once fewer than half of ``queueLimit`` frames are queued (at once if so), or
    /// when the connection closes or the task is cancelled: a stream of values sends only
    /// then, so values never fill the queue that replies and other notifications share.
    public func waitForRoom() async {
        let id = state.withLockedValue { state -> UInt64 in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        let room = queueLimit / 2
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLockedValue { state -> Bool in
                    guard state.queued >= room, !state.closed, !Task.isCancelled else { return true }
                    state.roomWaiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.roomWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// A queued frame was written to the socket: waiters for room go on once there is some.
    func frameWritten() {
        let room = queueLimit / 2
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.queued = max(0, state.queued - 1)
            guard state.queued < room, !state.roomWaiters.isEmpty else { return [] }
            defer { state.roomWaiters = [:] }
            return Array(state.roomWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Sends a notification (a request without id) whose params are `params`, encoded as
    /// they are. Returns `false` when the connection is closed or the client is too slow (it
    /// is then disconnected): stop sending to it.
    @discardableResult
    public func notify(method: String, params: some Encodable) -> Bool {
        guard let frame = try? JSONCodec.encode(RPCOutgoing(method: method, params: params, id: nil)) else { return false }
        return send(frame)
    }

    /// Whether a handler keeps something for this connection until it closes (a
    /// subscription, a lease, a followed characteristic: whatever registered
    /// ``onClose(_:)``). The server never closes such a connection for
    /// being idle; one that holds nothing and has no call in flight it does.
    public var holdsSomething: Bool {
        state.withLockedValue { !$0.closeActions.isEmpty }
    }

    /// Runs `action` once when the connection closes (at once if it already has). A
    /// connection with an action to run holds something (``holdsSomething``): register one
    /// for what the client keeps without calls, and only for that.
    public func onClose(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLockedValue { state -> Bool in
            if state.closed { return true }
            state.closeActions.append(action)
            return false
        }
        if runNow { action() }
    }

    @discardableResult
    func send(_ frame: [UInt8]) -> Bool {
        guard !isClosed else { return false }
        state.withLockedValue { $0.queued += 1 }
        if sink(frame) { return true }
        markClosed()
        return false
    }

    func markClosed() {
        let (actions, waiters) = state.withLockedValue { state -> ([@Sendable () -> Void], [CheckedContinuation<Void, Never>]) in
            guard !state.closed else { return ([], []) }
            state.closed = true
            defer {
                state.closeActions = []
                state.inputEndActions = []
                state.roomWaiters = [:]
            }
            return (state.inputEndActions + state.closeActions, Array(state.roomWaiters.values))
        }
        for waiter in waiters { waiter.resume() }
        for action in actions { action() }
    }
}
