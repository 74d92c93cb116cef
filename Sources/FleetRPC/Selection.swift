/// Which boards a call addresses: `"all"`, an address, a name or alias, a glob (`lab-*`,
/// `nano-0?`), or a list of those. On the wire it is a string or an array of strings.
public enum Selection: Sendable, Hashable {
    /// Every known board.
    case all
    /// Boards matching any of these patterns (addresses, names, aliases or globs).
    case patterns([String])

    /// A selection of one pattern (`"all"` means ``all``).
    public init(_ pattern: String) {
        self = pattern == "all" ? .all : .patterns([pattern])
    }

    /// Reads a selection from JSON, saying clearly what is wrong with any other shape.
    public init(validating value: JSONValue) throws(SelectionError) {
        switch value {
        case .string(let pattern):
            guard !pattern.isEmpty else { throw SelectionError("an empty string selects no board") }
            self.init(pattern)
        case .array(let elements):
            guard !elements.isEmpty else { throw SelectionError("an empty list selects no board") }
            var patterns: [String] = []
            for element in elements {
                guard case .string(let pattern) = element else {
                    throw SelectionError("every element of the list must be a string, found \(element.kindDescription)")
                }
                guard !pattern.isEmpty else { throw SelectionError("an empty string in the list selects no board") }
                if pattern == "all" {
                    self = .all
                    return
                }
                patterns.append(pattern)
            }
            self = .patterns(patterns)
        default:
            throw SelectionError(
                "a selection is \"all\", a board address, name, alias or glob, or a list of those; found \(value.kindDescription)")
        }
    }

    /// Whether a board with this address, name and alias is selected. Addresses compare
    /// without regard to case; names and aliases exactly; globs use `*` and `?`.
    public func matches(address: String, name: String?, alias: String?) -> Bool {
        switch self {
        case .all: return true
        case .patterns(let patterns):
            return patterns.contains { pattern in
                if BoardAddress.isValid(pattern) { return pattern.uppercased() == address.uppercased() }
                if Selection.glob(pattern, matches: address.uppercased()) { return true }
                if let name, Selection.glob(pattern, matches: name) { return true }
                if let alias, Selection.glob(pattern, matches: alias) { return true }
                return false
            }
        }
    }

    /// Whether this selection can match at most one board by address (one address pattern).
    public var singleAddress: String? {
        if case .patterns(let patterns) = self, patterns.count == 1, let address = BoardAddress.normalized(patterns[0]) {
            return address
        }
        return nil
    }

    /// Glob matching with `*` (any run) and `?` (any one character); everything else literal.
    static func glob(_ pattern: String, matches text: String) -> Bool {
        let pattern = Array(pattern)
        let text = Array(text)
        var p = 0
        var t = 0
        var starP = -1
        var starT = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "?" || pattern[p] == text[t] {
                p += 1
                t += 1
            } else if p < pattern.count, pattern[p] == "*" {
                starP = p
                starT = t
                p += 1
            } else if starP >= 0 {
                p = starP + 1
                starT += 1
                t = starT
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }
}

extension Selection: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let value = try container.decode(JSONValue.self)
        do {
            try self.init(validating: value)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .all: try container.encode("all")
        case .patterns(let patterns) where patterns.count == 1: try container.encode(patterns[0])
        case .patterns(let patterns): try container.encode(patterns)
        }
    }
}

/// Why a value is not a selection.
public struct SelectionError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
