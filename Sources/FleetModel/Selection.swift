/// Which boards a command targets: `all`, addresses, names/aliases, globs, or a list of them.
public struct Selection: Sendable, Hashable, CustomStringConvertible {
    /// One element of a selection.
    public enum Selector: Sendable, Hashable, CustomStringConvertible {
        /// Every known board.
        case all
        /// One board by address.
        case address(BoardAddress)
        /// Boards whose name or alias is exactly this.
        case name(String)
        /// Boards whose address (any case), name or alias matches the pattern.
        case glob(GlobPattern)

        /// Parses one selector: `all`, an address, a pattern containing `*`, `?` or `[`,
        /// otherwise a name or alias. Throws on an empty string or a malformed pattern.
        public init(parsing text: String) throws(FleetError) {
            let trimmed = text.trimmingWhitespace()
            if trimmed.isEmpty {
                throw FleetError(.invalidArgument, "An empty board selector matches nothing; give an address, name, alias, glob or \"all\".")
            }
            if trimmed == "all" {
                self = .all
            } else if let address = BoardAddress(trimmed) {
                self = .address(address)
            } else if GlobPattern.hasMetacharacters(trimmed) {
                self = .glob(try GlobPattern(trimmed))
            } else {
                self = .name(trimmed)
            }
        }

        /// Whether this selector matches `board`.
        public func matches(_ board: BoardIdentity) -> Bool {
            switch self {
            case .all: true
            case .address(let address): board.address == address
            case .name(let name): board.name == name || board.alias == name
            case .glob(let pattern):
                pattern.matches(board.address.rawValue, caseInsensitive: true)
                    || board.name.map { pattern.matches($0) } ?? false
                    || board.alias.map { pattern.matches($0) } ?? false
            }
        }

        public var description: String {
            switch self {
            case .all: "all"
            case .address(let address): address.rawValue
            case .name(let name): name
            case .glob(let pattern): pattern.pattern
            }
        }
    }

    /// The selectors, in the order given.
    public let selectors: [Selector]

    public init(_ selectors: [Selector]) { self.selectors = selectors }

    /// Every board.
    public static let all = Selection([.all])

    /// Parses each string with ``Selector/init(parsing:)``. Throws on an empty list.
    public init(parsing texts: [String]) throws(FleetError) {
        guard !texts.isEmpty else {
            throw FleetError(.invalidArgument, "No boards were selected; give an address, name, alias, glob or \"all\".")
        }
        var selectors: [Selector] = []
        for text in texts { selectors.append(try Selector(parsing: text)) }
        self.selectors = selectors
    }

    /// Matches the selection against `boards`.
    /// - Returns: the matched boards (each once, in the order of `boards`) and the selectors
    ///   that matched nothing (`all` is never reported: an empty fleet is not an error).
    public func match(_ boards: [BoardIdentity]) -> Match {
        var matched = Set<BoardAddress>()
        var unmatched: [Selector] = []
        for selector in selectors {
            var hit = false
            for board in boards where selector.matches(board) {
                matched.insert(board.address)
                hit = true
            }
            if !hit && selector != .all && !unmatched.contains(selector) { unmatched.append(selector) }
        }
        var seen = Set<BoardAddress>()
        let boardsInOrder = boards.filter { matched.contains($0.address) && seen.insert($0.address).inserted }
        return Match(boards: boardsInOrder, unmatched: unmatched)
    }

    /// The result of ``match(_:)``.
    public struct Match: Sendable, Hashable {
        /// Boards selected.
        public let boards: [BoardIdentity]
        /// Selectors that matched no board, for a clear error ("no board matches 'nano-9*'").
        public let unmatched: [Selector]
    }

    public var description: String { selectors.map(\.description).joined(separator: ",") }
}

extension String {
    /// The string without leading and trailing white space (selectors, aliases).
    public func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }
}

extension Selection: Codable {
    /// On the wire a selection is one string (`"all"`, `"lab-*"`) or a list of them.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let texts: [String]
        if let one = try? container.decode(String.self) {
            texts = [one]
        } else {
            texts = try container.decode([String].self)
        }
        do {
            try self.init(parsing: texts)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if selectors.count == 1 {
            try container.encode(selectors[0].description)
        } else {
            try container.encode(selectors.map(\.description))
        }
    }
}
