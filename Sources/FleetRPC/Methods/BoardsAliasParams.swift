/// Parameters of `boards.alias`.
public struct BoardsAliasParams: Sendable, Hashable, Codable {
    /// The board's Bluetooth address.
    public var address: String
    /// The new alias; an empty string removes it.
    public var alias: String

    public init(address: String, alias: String) {
        self.address = address
        self.alias = alias
    }
}
