/// Signal subscriptions: local registration plus `AddMatch`/`RemoveMatch` on the bus.
extension DBusEngine {
    /// Registers a subscription locally (signals are routed to it from now on) and returns
    /// its id, plus the well-known sender name when this is its first subscriber.
    func addSubscription(
        _ rule: DBusMatchRule, continuation: AsyncThrowingStream<DBusSignal, any Error>.Continuation
    ) throws(DBusError) -> (id: UInt64, newlyTrackedName: String?) {
        let result: Result<(UInt64, String?), DBusError> = shared.withLock { s in
            if let error = s.terminated { return .failure(error) }
            let id = s.nextID
            s.nextID += 1
            s.subscriptions[id] = Subscription(rule: rule, continuation: continuation)
            var newName: String?
            if let sender = rule.sender, Self.isWellKnown(sender) {
                s.trackedNames[sender, default: TrackedName()].subscribers += 1
                if s.trackedNames[sender]?.subscribers == 1 { newName = sender }
            }
            return .success((id, newName))
        }
        let (id, name) = try result.get()
        return (id, name)
    }

    /// Removes a subscription (idempotent). Sends `RemoveMatch` unless `addFailed`, and
    /// stops tracking a well-known sender nobody else uses.
    func removeSubscription(id: UInt64, addFailed: Bool = false) {
        let removed: (Subscription, Bool)? = shared.withLock { s in
            guard let subscription = s.subscriptions.removeValue(forKey: id) else { return nil }
            var untrack = false
            if let sender = subscription.rule.sender, Self.isWellKnown(sender),
                var tracked = s.trackedNames[sender]
            {
                tracked.subscribers -= 1
                if tracked.subscribers <= 0 {
                    s.trackedNames[sender] = nil
                    untrack = true
                } else {
                    s.trackedNames[sender] = tracked
                }
            }
            return (subscription, untrack)
        }
        guard let (subscription, untrack) = removed else { return }
        subscription.continuation.finish()
        if !addFailed { sendBusCallWithoutReply("RemoveMatch", subscription.rule.ruleString) }
        if untrack, let sender = subscription.rule.sender {
            sendBusCallWithoutReply("RemoveMatch", Self.ownerChangeRule(for: sender).ruleString)
        }
    }

    /// Starts following the owner of `name`: match its NameOwnerChanged, then ask the bus.
    func trackOwner(of name: String) async throws {
        _ = try await busCall("AddMatch", [.string(Self.ownerChangeRule(for: name).ruleString)])
        let reply = try await call(Self.busMessage("GetNameOwner", [.string(name)]), timeout: .seconds(25))
        let owner: String? =
            if reply.isError { nil } else { (try? reply.arguments())?.first?.string }
        shared.withLock { s in
            // A NameOwnerChanged seen meanwhile is newer than this answer.
            if s.trackedNames[name] != nil, s.trackedNames[name]?.owner == nil {
                s.trackedNames[name]?.owner = .some(owner)
            }
        }
    }

    /// A call to the bus daemon; an error reply is thrown.
    func busCall(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        let reply = try await call(Self.busMessage(member, arguments), timeout: .seconds(25))
        if reply.isError { throw reply.asError }
        return try reply.arguments()
    }

    private func sendBusCallWithoutReply(_ member: String, _ argument: String) {
        guard let message = try? Self.busMessage(member, [.string(argument)]) else { return }
        message.setNoReply()
        try? enqueue(.send(message))
    }

    static func busMessage(_ member: String, _ arguments: [DBusValue]) throws(DBusError) -> DBusMessage {
        try DBusMessage.methodCall(
            destination: DBusNames.busName, path: DBusNames.busPath, interface: DBusNames.busName,
            member: member, arguments: arguments)
    }

    static func ownerChangeRule(for name: String) -> DBusMatchRule {
        DBusMatchRule(
            sender: DBusNames.busName, path: DBusNames.busPath, interface: DBusNames.busName,
            member: "NameOwnerChanged", arg0: name)
    }

    static func isWellKnown(_ name: String) -> Bool {
        !name.hasPrefix(":") && name != DBusNames.busName
    }
}
