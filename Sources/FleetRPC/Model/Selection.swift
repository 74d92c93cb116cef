/// Which boards a call addresses: `"all"`, an address, a name or alias, a glob (`lab-*`,
/// `nano-0?`), or a list of those. On the wire it is a string or an array of strings.
public import JSONRPC

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

    /// Whether this selection can match at most one board by address (one address pattern).
    public var singleAddress: String? {
        if case .patterns(let patterns) = self, patterns.count == 1, let address = BoardAddress.normalized(patterns[0]) {
            return address
        }
        return nil
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

extension RPCCheckedParams {
    /// The selection named `name` (checked as `.selection` by the descriptor).
    public func selection(_ name: String) throws(RPCError) -> Selection {
        guard let selection = try optionalSelection(name) else { throw .invalidParams("missing required parameter \"\(name)\"") }
        return selection
    }

    /// The selection named `name`, if given.
    public func optionalSelection(_ name: String) throws(RPCError) -> Selection? {
        guard let value = self[name] else { return nil }
        do {
            return try Selection(validating: value)
        } catch {
            throw .invalidParams("\"\(name)\": \(error.description)")
        }
    }
}
