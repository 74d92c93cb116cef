/// One `NameOwnerChanged` for a watched name; `nil` stands for "no owner".
public struct DBusNameOwnerChange: Sendable, Hashable {
    public let name: String
    public let oldOwner: String?
    public let newOwner: String?

    public init(name: String, oldOwner: String?, newOwner: String?) {
        self.name = name
        self.oldOwner = oldOwner
        self.newOwner = newOwner
    }
}
