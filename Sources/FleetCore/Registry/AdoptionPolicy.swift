/// Which discovered boards join the fleet.
///
/// A board must advertise the LED service. With an allow-list, only boards matching one of
/// its selectors (address, address glob, name) are adopted; without one, every such board is
/// adopted when ``autoAdopt`` is on. Boards already in the registry are always kept.
public struct AdoptionPolicy: Sendable, Hashable {
    /// Adopt any board advertising the LED service (when there is no allow-list).
    public var autoAdopt: Bool
    /// If non-empty, only boards matching one of these are adopted.
    public var allowList: [Selection.Selector]

    public init(autoAdopt: Bool = true, allowList: [Selection.Selector] = []) {
        self.autoAdopt = autoAdopt
        self.allowList = allowList
    }

    /// Parses allow-list entries (addresses, globs, names); throws on a malformed entry.
    public init(autoAdopt: Bool = true, allowing entries: [String]) throws(FleetError) {
        var selectors: [Selection.Selector] = []
        for entry in entries { selectors.append(try Selection.Selector(parsing: entry)) }
        self.init(autoAdopt: autoAdopt, allowList: selectors)
    }

    /// Whether a newly discovered board should be adopted.
    public func shouldAdopt(_ board: BoardIdentity, ofKnownKind: Bool) -> Bool {
        guard ofKnownKind else { return false }
        if allowList.isEmpty { return autoAdopt }
        return allowList.contains { $0.matches(board) }
    }
}
