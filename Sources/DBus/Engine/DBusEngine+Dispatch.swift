internal import CDBus
import Logging

/// Incoming messages (owner thread): signals to subscriptions, method calls to exported
/// objects, and `NameOwnerChanged` bookkeeping for well-known senders.
extension DBusEngine {
    func filter(_ raw: OpaquePointer) -> DBusHandlerResult {
        let type = dbus_message_get_type(raw)
        if type == CDBUS_MESSAGE_TYPE_SIGNAL {
            deliverSignal(DBusMessage(borrowing: raw))
        } else if type == CDBUS_MESSAGE_TYPE_METHOD_CALL {
            if handleMethodCall(DBusMessage(borrowing: raw)) { return DBUS_HANDLER_RESULT_HANDLED }
        }
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    private func deliverSignal(_ message: DBusMessage) {
        guard let path = message.path, let interface = message.interface, let member = message.member else { return }
        if interface == DBusNames.localInterface { return }  // Disconnected: the loop notices.
        let sender = message.sender ?? ""
        let arg0 = message.firstStringArgument
        let isOwnerChange =
            sender == DBusNames.busName && interface == DBusNames.busName && member == "NameOwnerChanged"
        var decoded: [DBusValue]?
        if isOwnerChange, let name = arg0 {
            let arguments = try? message.arguments()
            decoded = arguments
            if let arguments, arguments.count == 3, let owner = arguments[2].string {
                shared.withLock { s in
                    s.trackedNames[name]?.owner = .some(owner.isEmpty ? nil : owner)
                }
            }
        }
        let targets = shared.withLock { s in
            s.subscriptions.compactMap { id, subscription -> (UInt64, AsyncThrowingStream<DBusSignal, any Error>.Continuation)? in
                let resolved = subscription.rule.sender.flatMap { s.trackedNames[$0]?.owner }
                guard subscription.rule.matches(
                    sender: sender, path: path, interface: interface, member: member,
                    arg0: arg0, resolvedSender: resolved)
                else { return nil }
                return (id, subscription.continuation)
            }
        }
        guard !targets.isEmpty else { return }
        let arguments: [DBusValue]
        do {
            arguments = try decoded ?? message.arguments()
        } catch {
            logger.warning("Dropped a signal that could not be decoded", metadata: [
                "dbus.path": "\(path)", "dbus.member": "\(interface).\(member)", "error": "\(error)",
            ])
            return
        }
        let signal = DBusSignal(sender: sender, path: path, interface: interface, member: member, arguments: arguments)
        for (id, continuation) in targets {
            if case .dropped = continuation.yield(signal) {
                logger.warning("A signal subscriber fell behind; ending its stream", metadata: [
                    "dbus.match": "\(shared.withLock { $0.subscriptions[id]?.rule.ruleString ?? "" })"
                ])
                continuation.finish(throwing: DBusError(
                    name: "org.freedesktop.DBus.Error.LimitsExceeded",
                    message: "The signal stream's buffer is full: the consumer fell behind and missed signals; subscribe again and re-read the state."))
            }
        }
    }

    /// Runs an exported object's handler in a task; the reply is queued when it returns.
    private func handleMethodCall(_ message: DBusMessage) -> Bool {
        guard let path = message.path, let member = message.member else { return false }
        let handler = shared.withLock { $0.objects[path] }
        guard let handler else { return false }
        let arguments: [DBusValue]
        do {
            arguments = try message.arguments()
        } catch {
            reply(to: message, with: .failure(error))
            return true
        }
        let call = DBusMethodCall(
            sender: message.sender ?? "", path: path, interface: message.interface, member: member,
            arguments: arguments)
        let id = makeID()
        shared.withLock { s in
            guard s.terminated == nil else { return }
            // Created under the lock so the task's own removal cannot run before the insert.
            s.handlerTasks[id] = Task { [self] in
                let result: Result<[DBusValue], DBusError>
                do {
                    result = .success(try await handler(call))
                } catch let error as DBusError {
                    result = .failure(error)
                } catch {
                    result = .failure(DBusError(name: DBusError.Name.failed, message: "\(error)"))
                }
                reply(to: message, with: result)
                _ = shared.withLock { $0.handlerTasks.removeValue(forKey: id) }
            }
        }
        return true
    }

    private func reply(to call: DBusMessage, with result: Result<[DBusValue], DBusError>) {
        guard !call.noReply else { return }
        let reply: DBusMessage?
        switch result {
        case .success(let values):
            do {
                reply = try DBusMessage.methodReturn(to: call, arguments: values)
            } catch {
                reply = DBusMessage.errorReply(to: call, error: error)
            }
        case .failure(let error):
            reply = DBusMessage.errorReply(to: call, error: error)
        }
        if let reply { try? enqueue(.send(reply)) }
    }
}
