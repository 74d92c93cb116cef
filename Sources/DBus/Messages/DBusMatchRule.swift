/// A signal match rule (`type='signal'` plus the fields that are set).
public struct DBusMatchRule: Sendable, Hashable {
    public var sender: String?
    public var path: String?
    public var pathNamespace: String?
    public var interface: String?
    public var member: String?
    /// Matches when the first argument is a string equal to this.
    public var arg0: String?

    public init(
        sender: String? = nil, path: String? = nil, pathNamespace: String? = nil,
        interface: String? = nil, member: String? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule as `AddMatch` takes it, values quoted per the D-Bus specification.
    public var ruleString: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            // Inside quotes nothing is special; a quote is written as '\''.
            parts.append("\(key)='\(value.replacingAll("'", with: "'\\''"))'")
        }
        add("sender", sender)
        add("path", path)
        add("path_namespace", pathNamespace)
        add("interface", interface)
        add("member", member)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    /// Checks the fields the bus would reject, so a bad rule fails with a clear error.
    func validate() throws(DBusError) {
        if let sender { try DBusNames.validateBusName(sender) }
        if let path { try DBusNames.validateObjectPath(path) }
        if let pathNamespace { try DBusNames.validateObjectPath(pathNamespace) }
        if path != nil, pathNamespace != nil {
            throw DBusError.invalidArgs("A match rule cannot have both path and pathNamespace.")
        }
        if let interface { try DBusNames.validateInterface(interface) }
        if let member { try DBusNames.validateMember(member) }
        if let arg0 { try DBusNames.validateString(arg0) }
    }

    /// Local matching of a received signal. A well-known `sender` is compared with the
    /// owner the engine tracks for it (`resolvedSender`); when unknown it is not checked
    /// locally (the bus only routes signals from that name's owner for this rule).
    func matches(
        sender messageSender: String, path messagePath: String, interface messageInterface: String,
        member messageMember: String, arg0 messageArg0: String?, resolvedSender: String??
    ) -> Bool {
        if let sender, sender != messageSender {
            switch resolvedSender {
            case .some(.some(let owner)): if owner != messageSender { return false }
            case .some(.none): return false
            case .none: if sender.hasPrefix(":") || sender == DBusNames.busName { return false }
            }
        }
        if let path, path != messagePath { return false }
        if let pathNamespace, pathNamespace != "/", messagePath != pathNamespace,
            !messagePath.hasPrefix(pathNamespace + "/")
        {
            return false
        }
        if let interface, interface != messageInterface { return false }
        if let member, member != messageMember { return false }
        if let arg0, arg0 != messageArg0 { return false }
        return true
    }
}

extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        guard contains(target) else { return self }
        var result = ""
        for c in self {
            if c == target { result += replacement } else { result.append(c) }
        }
        return result
    }
}
