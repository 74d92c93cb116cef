internal import CDBus
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The owner thread: connection setup, the poll loop, watches and timeouts.
extension DBusEngine {
    /// Starts the owner thread; it opens and registers the connection (blocking calls are
    /// fine there: its loop has not started) and resumes `continuation` with the unique name.
    func start(address: String, continuation: CheckedContinuation<String, any Error>) {
        startup = (address, continuation)  // happens-before the thread starts
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            let engine = Unmanaged<DBusEngine>.fromOpaque(argument!).takeRetainedValue()
            engine.threadMain()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<DBusEngine>.fromOpaque(context).release()
            startup = nil
            shared.withLock { $0.terminated = .closed }
            continuation.resume(throwing: DBusError(
                name: DBusError.Name.failed, message: "Could not start the D-Bus engine thread (error \(rc))."))
            return
        }
        pthread_detach(thread)
    }

    private func threadMain() {
        cdbus_set_thread_name("dbus-engine")
        ownerThread = pthread_self()
        guard let (address, continuation) = startup else { return }
        startup = nil
        let uniqueName: String
        do {
            uniqueName = try open(address: address)
        } catch {
            shared.withLock { $0.terminated = .closed }
            continuation.resume(throwing: error)
            return
        }
        logger.debug("Connected to D-Bus", metadata: ["dbus.address": "\(address)", "dbus.name": "\(uniqueName)"])
        continuation.resume(returning: uniqueName)
        runLoop()
    }

    private func open(address: String) throws(DBusError) -> String {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let conn = address.withCString({ dbus_connection_open_private($0, &error) }) else {
            throw Self.takeError(&error, context: "Cannot connect to the D-Bus bus at \(address)")
        }
        dbus_connection_set_exit_on_disconnect(conn, 0)
        guard dbus_bus_register(conn, &error) != 0 else {
            dbus_connection_close(conn)
            dbus_connection_unref(conn)
            throw Self.takeError(&error, context: "Cannot register with the D-Bus bus at \(address)")
        }
        connection = conn
        let data = Unmanaged.passUnretained(self).toOpaque()
        let watchesOK = dbus_connection_set_watch_functions(conn, { watch, data in
            DBusEngine.from(data).watches.append(watch!)
            return 1
        }, { watch, data in
            DBusEngine.from(data).watches.removeAll { $0 == watch! }
        }, { _, _ in
            // Enabled flags are read on every loop iteration.
        }, data, nil)
        let timeoutsOK = dbus_connection_set_timeout_functions(conn, { timeout, data in
            DBusEngine.from(data).timeouts[timeout!] = DBusEngine.deadline(of: timeout!)
            return 1
        }, { timeout, data in
            DBusEngine.from(data).timeouts[timeout!] = nil
        }, { timeout, data in
            DBusEngine.from(data).timeouts[timeout!] = DBusEngine.deadline(of: timeout!)
        }, data, nil)
        // libdbus calls this after every send; on the owner thread itself the loop looks at
        // everything again before it polls, so only other threads need the eventfd.
        dbus_connection_set_wakeup_main_function(conn, { data in
            let engine = DBusEngine.from(data)
            if pthread_equal(pthread_self(), engine.ownerThread) == 0 { engine.wake() }
        }, data, nil)
        let filterOK = dbus_connection_add_filter(conn, { _, message, data in
            DBusEngine.from(data).filter(message!)
        }, data, nil)
        guard watchesOK != 0, timeoutsOK != 0, filterOK != 0 else {
            releaseConnection()
            throw DBusError.noMemory("setting up the connection")
        }
        return String(cString: dbus_bus_get_unique_name(conn))
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> DBusEngine {
        Unmanaged<DBusEngine>.fromOpaque(data!).takeUnretainedValue()
    }

    static func takeError(_ error: inout CDBus.DBusError, context: String) -> DBusError {
        guard dbus_error_is_set(&error) != 0 else {
            return DBusError(name: DBusError.Name.failed, message: context + ".")
        }
        let name = error.name.map { String(cString: $0) } ?? DBusError.Name.failed
        let message = error.message.map { String(cString: $0) } ?? ""
        return DBusError(name: name, message: "\(context): \(message)")
    }

    // MARK: Loop

    private func runLoop() {
        guard let conn = connection else { return }
        var pollFDs: [pollfd] = []
        var polledWatches: [OpaquePointer] = []
        while true {
            let commands = shared.withLock { s in
                let commands = s.commands
                s.commands.removeAll(keepingCapacity: true)
                return commands
            }
            for command in commands {
                if case .close = command {
                    terminate(with: .closed)
                    return
                }
                process(command, on: conn)
            }
            while dbus_connection_get_dispatch_status(conn) == DBUS_DISPATCH_DATA_REMAINS {
                dbus_connection_dispatch(conn)
            }
            for pending in completedPendings { dbus_pending_call_unref(pending) }
            completedPendings.removeAll(keepingCapacity: true)
            if dbus_connection_get_is_connected(conn) == 0 {
                logger.warning("The D-Bus connection was lost")
                terminate(with: .disconnected())
                return
            }
            let sleep = shared.withLock { s in
                guard s.commands.isEmpty else { return false }
                s.sleeping = true
                return true
            }
            guard sleep else { continue }

            pollFDs.removeAll(keepingCapacity: true)
            polledWatches.removeAll(keepingCapacity: true)
            pollFDs.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            for watch in watches where dbus_watch_get_enabled(watch) != 0 {
                let flags = dbus_watch_get_flags(watch)
                var events: Int16 = 0
                if flags & CDBUS_WATCH_READABLE != 0 { events |= Int16(POLLIN) }
                if flags & CDBUS_WATCH_WRITABLE != 0 { events |= Int16(POLLOUT) }
                pollFDs.append(pollfd(fd: dbus_watch_get_unix_fd(watch), events: events, revents: 0))
                polledWatches.append(watch)
            }
            let rc = poll(&pollFDs, nfds_t(pollFDs.count), nextTimeoutMilliseconds())
            shared.withLock { $0.sleeping = false }
            if rc < 0 {
                if errno == EINTR { continue }
                logger.error("poll() failed on the D-Bus connection", metadata: ["errno": "\(errno)"])
                terminate(with: .disconnected("The D-Bus engine's poll() failed (errno \(errno))."))
                return
            }
            if pollFDs[0].revents != 0 { cdbus_eventfd_drain(wakeFD) }
            for (index, watch) in polledWatches.enumerated() {
                let revents = Int32(pollFDs[index + 1].revents)
                guard revents != 0, watches.contains(watch) else { continue }
                var flags: UInt32 = 0
                if revents & Int32(POLLIN) != 0 { flags |= CDBUS_WATCH_READABLE }
                if revents & Int32(POLLOUT) != 0 { flags |= CDBUS_WATCH_WRITABLE }
                if revents & Int32(POLLERR) != 0 { flags |= CDBUS_WATCH_ERROR }
                if revents & Int32(POLLHUP) != 0 { flags |= CDBUS_WATCH_HANGUP }
                dbus_watch_handle(watch, flags)
            }
            handleExpiredTimeouts()
        }
    }

    private func process(_ command: Command, on conn: OpaquePointer) {
        switch command {
        case .call(let id, let message, let timeout):
            // Skip calls cancelled while queued.
            let live = shared.withLock { s in
                if case .waiting = s.calls[id] { true } else { false }
            }
            guard live else { return }
            var pending: OpaquePointer? = nil
            guard dbus_connection_send_with_reply(conn, message.raw, &pending, timeout) != 0 else {
                complete(id: id, with: .failure(.noMemory("sending a method call")))
                return
            }
            guard let pending else {
                // libdbus returns TRUE with no pending call when disconnected.
                complete(id: id, with: .failure(.disconnected()))
                return
            }
            let context = Unmanaged.passRetained(PendingContext(engine: self, id: id)).toOpaque()
            guard dbus_pending_call_set_notify(pending, { pending, data in
                let context = Unmanaged<PendingContext>.fromOpaque(data!).takeUnretainedValue()
                context.engine?.pendingFinished(id: context.id, pending: pending!)
            }, context, { data in
                Unmanaged<PendingContext>.fromOpaque(data!).release()
            }) != 0 else {
                Unmanaged<PendingContext>.fromOpaque(context).release()
                dbus_pending_call_cancel(pending)
                dbus_pending_call_unref(pending)
                complete(id: id, with: .failure(.noMemory("waiting for a reply")))
                return
            }
            pendings[id] = pending
        case .send(let message):
            if dbus_connection_send(conn, message.raw, nil) == 0 {
                logger.warning("libdbus could not queue an outgoing message (out of memory)")
            }
        case .cancel(let id):
            if let pending = pendings.removeValue(forKey: id) {
                dbus_pending_call_cancel(pending)
                dbus_pending_call_unref(pending)
            }
        case .close:
            break
        }
    }

    /// The pending call's notify (owner thread, during dispatch).
    private func pendingFinished(id: UInt64, pending: OpaquePointer) {
        if pendings.removeValue(forKey: id) != nil { completedPendings.append(pending) }
        guard let raw = dbus_pending_call_steal_reply(pending) else {
            complete(id: id, with: .failure(.disconnected()))
            return
        }
        let reply = DBusMessage(owning: raw)
        if reply.type == CDBUS_MESSAGE_TYPE_ERROR, reply.errorName == DBusError.Name.noReply,
            let conn = connection, dbus_connection_get_is_connected(conn) == 0
        {
            // libdbus completes outstanding calls with NoReply when the link drops.
            complete(id: id, with: .failure(.disconnected()))
            return
        }
        complete(id: id, with: .success(reply))
    }

    // MARK: Timeouts

    private static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    private static func deadline(of timeout: OpaquePointer) -> UInt64 {
        guard dbus_timeout_get_enabled(timeout) != 0 else { return .max }
        return now() + UInt64(max(0, dbus_timeout_get_interval(timeout))) * 1_000_000
    }

    private func nextTimeoutMilliseconds() -> Int32 {
        guard let earliest = timeouts.values.min(), earliest != .max else { return -1 }
        let now = Self.now()
        if earliest <= now { return 0 }
        let ms = (earliest - now + 999_999) / 1_000_000
        return Int32(min(ms, UInt64(Int32.max)))
    }

    private func handleExpiredTimeouts() {
        guard let earliest = timeouts.values.min() else { return }
        let now = Self.now()
        guard earliest <= now else { return }
        let expired = timeouts.compactMap { $0.value <= now ? $0.key : nil }
        for timeout in expired where timeouts[timeout] != nil {
            dbus_timeout_handle(timeout)
            // libdbus timeouts repeat until removed or disabled.
            if timeouts[timeout] != nil { timeouts[timeout] = Self.deadline(of: timeout) }
        }
    }

    // MARK: Termination

    /// Fails everything outstanding with `error`, then closes the connection.
    func terminate(with error: DBusError) {
        let (calls, subscriptions, tasks) = shared.withLock { s in
            s.terminated = s.terminated ?? error
            let calls = s.calls.values.compactMap { state -> UnsafeContinuation<DBusMessage, any Error>? in
                if case .waiting(let continuation) = state { continuation } else { nil }
            }
            let result = (calls, Array(s.subscriptions.values), Array(s.handlerTasks.values))
            s.calls.removeAll()
            s.subscriptions.removeAll()
            s.handlerTasks.removeAll()
            s.trackedNames.removeAll()
            s.commands.removeAll()
            return result
        }
        for (_, pending) in pendings {
            dbus_pending_call_cancel(pending)
            dbus_pending_call_unref(pending)
        }
        pendings.removeAll()
        for pending in completedPendings { dbus_pending_call_unref(pending) }
        completedPendings.removeAll()
        for continuation in calls { continuation.resume(throwing: error) }
        for subscription in subscriptions { subscription.continuation.finish(throwing: error) }
        for task in tasks { task.cancel() }
        releaseConnection()
    }

    private func releaseConnection() {
        guard let conn = connection else { return }
        connection = nil
        dbus_connection_close(conn)
        dbus_connection_unref(conn)
        watches.removeAll()
        timeouts.removeAll()
    }
}

/// What a pending call's notify needs: the engine (weak: libdbus may free the pending call,
/// and this context with it, after the engine is gone) and the call's id.
///
/// `@unchecked Sendable` is not needed: it is created and used on the owner thread only.
final class PendingContext {
    weak var engine: DBusEngine?
    let id: UInt64

    init(engine: DBusEngine, id: UInt64) {
        self.engine = engine
        self.id = id
    }
}
