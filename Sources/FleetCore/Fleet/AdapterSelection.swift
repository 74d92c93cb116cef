import BlueZ

/// The adapters a fleet connects through: named ones (interface names like `hci0`, or
/// addresses), or every adapter BlueZ shows that can be a central, including ones plugged
/// in later.
public enum AdapterSelection: Sendable, Hashable, CustomStringConvertible {
    case all
    case named([String])

    /// One adapter, by name or address.
    public static func named(_ nameOrAddress: String) -> AdapterSelection { .named([nameOrAddress]) }

    func matches(_ adapter: BlueZAdapter) -> Bool {
        switch self {
        case .all: adapter.canBeCentral
        case .named(let names): names.contains { AdapterSelection.names($0, adapter) }
        }
    }

    /// Whether `nameOrAddress` names `adapter`.
    static func names(_ nameOrAddress: String, _ adapter: BlueZAdapter) -> Bool {
        nameOrAddress == adapter.name || nameOrAddress.uppercased() == adapter.address.uppercased()
    }

    /// The names asked for that BlueZ does not show (for status).
    func missing(among adapters: [BlueZAdapter]) -> [String] {
        guard case .named(let names) = self else { return [] }
        return names.filter { name in !adapters.contains { AdapterSelection.names(name, $0) } }
    }

    public var description: String {
        switch self {
        case .all: "all"
        case .named(let names): names.joined(separator: ", ")
        }
    }
}
