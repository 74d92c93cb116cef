/// What a selection is matched against.
public struct BoardIdentity: Sendable, Hashable {
    public var address: BoardAddress
    /// Advertised name, if known.
    public var name: String?
    /// User-assigned alias, if any.
    public var alias: String?

    public init(address: BoardAddress, name: String? = nil, alias: String? = nil) {
        self.address = address
        self.name = name
        self.alias = alias
    }
}
