public import Foundation

/// A known board as persisted in the registry.
public struct BoardRecord: Sendable, Hashable, Codable {
    /// Identity.
    public var address: BoardAddress
    /// Last advertised name, if any.
    public var name: String?
    /// User-assigned alias, if any.
    public var alias: String?
    /// The LED state to re-apply on reconnect.
    public var desiredLED: DesiredLED
    /// When the board was first adopted.
    public var firstSeen: Date
    /// When it last advertised or was connected.
    public var lastSeen: Date

    public init(
        address: BoardAddress, name: String? = nil, alias: String? = nil,
        desiredLED: DesiredLED = .unknown, firstSeen: Date, lastSeen: Date
    ) {
        self.address = address
        self.name = name
        self.alias = alias
        self.desiredLED = desiredLED
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
    }

    /// What selections match against.
    public var identity: BoardIdentity { BoardIdentity(address: address, name: name, alias: alias) }
}
