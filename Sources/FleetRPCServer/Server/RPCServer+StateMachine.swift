extension RPCServer {
    /// The server's life as one value: the state it is in, and what each event asks the
    /// server to do (an action), with no I/O, so that tests drive it directly.
    ///
    ///     idle ─bind─▶ binding ─socket made─▶ bound ─run─▶ serving ─shutdown─▶ draining ─run ends─▶ stopped
    ///     draining ─grace period over─▶ cancellingCalls ─run ends─▶ stopped
    ///     idle, binding, bound ─shutdown─▶ shutDownBeforeServing
    ///
    /// The server holds it behind one lock and carries out the actions outside it.
    /// `Socket` is the listening socket and `Waiter` what waits for the drain (in the
    /// server, ``RPCListener`` and a continuation); tests use plain values for both.
    struct StateMachine<Socket: Sendable, Waiter: Sendable>: Sendable {
        enum State: Sendable {
            /// Made; no socket yet.
            case idle
            /// `bind()` is creating the socket.
            case binding
            /// Listening: clients that connect wait in the backlog; nothing is answered yet.
            case bound(Socket)
            /// `run()` accepts connections and serves their calls.
            case serving(Socket, OpenConnections)
            /// Shutdown began: nothing more is accepted, open connections read no new calls
            /// and finish those in flight; `waiters` wait for the last one to close.
            case draining(OpenConnections, waiters: [Waiter])
            /// The grace period ended with calls still running: they are being cancelled, and
            /// nothing waits for them any more.
            case cancellingCalls(OpenConnections)
            /// Served, drained, and `run()` returned. A server runs once.
            case stopped
            /// Shut down before `run()` served anything: the socket is closed, and `run()`
            /// returns at once (a service told to stop before it started).
            case shutDownBeforeServing
        }

        private(set) var state: State = .idle

        /// Connections accepted and not yet closed (their calls may still be finishing).
        var connectionCount: Int {
            switch state {
            case .serving(_, let open), .draining(let open, _), .cancellingCalls(let open): open.count
            case .idle, .binding, .bound, .stopped, .shutDownBeforeServing: 0
            }
        }

        // MARK: Binding

        enum BindAction: Sendable, Hashable {
            /// Create the socket, then report ``socketCreated(_:)`` or ``bindFailed()``.
            case create
            /// Nothing to do: the socket exists or is being created (bind twice is a no-op),
            /// or the server was shut down before it served.
            case none
            case refuse(RPCServerError)
        }

        mutating func bind() -> BindAction {
            switch state {
            case .idle:
                state = .binding
                return .create
            case .binding, .bound, .serving, .draining, .cancellingCalls, .shutDownBeforeServing:
                return .none
            case .stopped:
                return .refuse(.stopped)
            }
        }

        enum SocketCreatedAction: Sendable {
            case keep
            /// Shutdown began while the socket was being made: close it unserved.
            case close(Socket)
        }

        mutating func socketCreated(_ socket: Socket) -> SocketCreatedAction {
            switch state {
            case .binding:
                state = .bound(socket)
                return .keep
            case .idle, .bound, .serving, .draining, .cancellingCalls, .stopped, .shutDownBeforeServing:
                return .close(socket)
            }
        }

        /// Creating the socket failed: the server may try again.
        mutating func bindFailed() {
            if case .binding = state { state = .idle }
        }

        // MARK: Running

        enum RunAction: Sendable {
            /// Accept connections on this socket until shutdown.
            case serve(Socket)
            /// The server was shut down before it served: return without error.
            case returnAtOnce
            case refuse(RPCServerError)
        }

        mutating func run() -> RunAction {
            switch state {
            case .bound(let socket):
                state = .serving(socket, OpenConnections())
                return .serve(socket)
            case .idle: return .refuse(.notBound)
            case .binding: return .refuse(.stillBinding)
            case .serving, .draining, .cancellingCalls: return .refuse(.alreadyServing)
            case .stopped: return .refuse(.stopped)
            case .shutDownBeforeServing: return .returnAtOnce
            }
        }

        /// `run()` is returning: every connection has closed.
        mutating func runEnded() {
            switch state {
            case .serving, .draining, .cancellingCalls: state = .stopped
            case .idle, .binding, .bound, .stopped, .shutDownBeforeServing: break
            }
        }

        // MARK: Connections

        enum AcceptAction: Sendable, Hashable {
            case serve(connectionID: UInt64)
            /// Accepted while the server drains (or after): close it unserved.
            case close
            /// Its user has `limit` connections open already: say so, and close it.
            case refuse(limit: Int)
            /// `limit` connections are open, the most the server keeps: say so, and close it.
            case refuseFull(limit: Int)
        }

        /// A connection of `uid` was accepted; a user other than root has at most
        /// `perUserLimit` open at once, and all of them together (root's counted) at most
        /// `totalLimit` unless it is root's.
        mutating func connectionAccepted(uid: UInt32, perUserLimit: Int, totalLimit: Int = .max) -> AcceptAction {
            switch state {
            case .serving(let socket, var open):
                if uid != 0, open.count >= totalLimit { return .refuseFull(limit: totalLimit) }
                if uid != 0, open.count(of: uid) >= perUserLimit { return .refuse(limit: perUserLimit) }
                let id = open.opened(uid: uid)
                state = .serving(socket, open)
                return .serve(connectionID: id)
            case .idle, .binding, .bound, .draining, .cancellingCalls, .stopped, .shutDownBeforeServing:
                return .close
            }
        }

        enum ConnectionClosedAction: Sendable {
            case none
            /// That was the last connection of the drain: wake who waits for it.
            case resume([Waiter])
        }

        /// A connection of `uid` that ``connectionAccepted(uid:perUserLimit:totalLimit:)`` let in has closed.
        mutating func connectionClosed(uid: UInt32) -> ConnectionClosedAction {
            switch state {
            case .serving(let socket, var open):
                open.closed(uid: uid)
                state = .serving(socket, open)
                return .none
            case .draining(var open, let waiters):
                open.closed(uid: uid)
                guard open.isEmpty, !waiters.isEmpty else {
                    state = .draining(open, waiters: waiters)
                    return .none
                }
                state = .draining(open, waiters: [])
                return .resume(waiters)
            case .cancellingCalls(var open):
                open.closed(uid: uid)
                state = .cancellingCalls(open)
                return .none
            case .idle, .binding, .bound, .stopped, .shutDownBeforeServing:
                return .none
            }
        }

        // MARK: Shutdown and drain

        enum ShutdownAction: Sendable {
            case none
            /// Stop accepting, and tell each open connection to read no new calls.
            case quiesce(Socket)
            /// Close the socket, which never served.
            case close(Socket)
        }

        mutating func triggerGracefulShutdown() -> ShutdownAction {
            switch state {
            case .idle, .binding:
                state = .shutDownBeforeServing
                return .none
            case .bound(let socket):
                state = .shutDownBeforeServing
                return .close(socket)
            case .serving(let socket, let open):
                state = .draining(open, waiters: [])
                return .quiesce(socket)
            case .draining, .cancellingCalls, .stopped, .shutDownBeforeServing:
                return .none
            }
        }

        enum WaitForDrainAction: Sendable, Hashable {
            /// The waiter is kept until the last connection closes (or the grace period ends).
            case wait
            /// Nothing to wait for: resume the waiter now.
            case resume
        }

        /// `waiter` waits until every connection has closed.
        mutating func waitForDrain(_ waiter: Waiter) -> WaitForDrainAction {
            switch state {
            case .draining(let open, var waiters) where !open.isEmpty:
                waiters.append(waiter)
                state = .draining(open, waiters: waiters)
                return .wait
            case .serving, .draining, .cancellingCalls, .idle, .binding, .bound, .stopped, .shutDownBeforeServing:
                return .resume
            }
        }

        /// The grace period is over with connections still open: their calls are cancelled.
        /// Returns the waiters to resume; a waiter that comes later is not kept.
        mutating func gracePeriodEnded() -> [Waiter] {
            switch state {
            case .draining(let open, let waiters):
                state = .cancellingCalls(open)
                return waiters
            case .idle, .binding, .bound, .serving, .cancellingCalls, .stopped, .shutDownBeforeServing:
                return []
            }
        }
    }
}

extension RPCServer.StateMachine.SocketCreatedAction: Equatable where Socket: Equatable {}
extension RPCServer.StateMachine.RunAction: Equatable where Socket: Equatable {}
extension RPCServer.StateMachine.ConnectionClosedAction: Equatable where Waiter: Equatable {}
extension RPCServer.StateMachine.ShutdownAction: Equatable where Socket: Equatable {}
