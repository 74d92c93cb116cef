import FleetRPC
import JSONRPC
import NIOConcurrencyHelpers

/// One client connection as handlers see it: who is calling, and a way to send
/// server→client notifications (events) on the same connection.
///
/// Notifications are queued with a bound; a client that does not read its socket until the
/// queue overflows is disconnected rather than buffered forever.
public final class RPCConnection: Sendable {
    /// Unique per server run; use it to key per-connection state such as subscriptions.
    public let id: UInt64
    public let credentials: PeerCredentials

    private struct State {
        var closed = false
        var closeActions: [@Sendable () -> Void] = []
    }

    private let state = NIOLockedValueBox(State())
    private let sink: @Sendable ([UInt8]) -> Bool

    /// A connection whose frames go to `send`, which returns `false` when the frame could not
    /// be queued (the connection is then treated as closed). The server makes these; tests may too.
    public init(id: UInt64, credentials: PeerCredentials, send: @escaping @Sendable ([UInt8]) -> Bool) {
        self.id = id
        self.credentials = credentials
        self.sink = send
    }

    /// Whether the connection has closed.
    public var isClosed: Bool { state.withLockedValue { $0.closed } }

    /// Sends a notification (a request without id) whose params are `params`, encoded as
    /// they are. Returns `false` when the connection is closed or the client is too slow (it
    /// is then disconnected): stop sending to it.
    @discardableResult
    public func notify(method: String, params: some Encodable) -> Bool {
        guard let frame = try? JSONCodec.encode(RPCOutgoing(method: method, params: params, id: nil)) else { return false }
        return send(frame)
    }

    /// Runs `action` once when the connection closes (at once if it already has).
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
        if sink(frame) { return true }
        markClosed()
        return false
    }

    func markClosed() {
        let actions = state.withLockedValue { state -> [@Sendable () -> Void] in
            guard !state.closed else { return [] }
            state.closed = true
            defer { state.closeActions = [] }
            return state.closeActions
        }
        for action in actions { action() }
    }
}
