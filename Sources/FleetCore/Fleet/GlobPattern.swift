/// A shell-style pattern: `*` any run, `?` one character, `[abc]`, `[a-z]`, `[!a]` / `[^a]`
/// sets, `\` escapes the next character. Matches whole strings, like `fnmatch(3)` without flags.
public struct GlobPattern: Sendable, Hashable, CustomStringConvertible {
    private enum Token: Sendable, Hashable {
        case literal(Character)
        case any
        case star
        case set(negated: Bool, items: [SetItem])
    }

    private enum SetItem: Sendable, Hashable {
        case single(Character)
        case range(Character, Character)
    }

    /// The pattern as written.
    public let pattern: String
    private let tokens: [Token]

    /// Whether `text` contains glob metacharacters (`*`, `?`, `[`).
    public static func hasMetacharacters(_ text: String) -> Bool {
        text.contains { $0 == "*" || $0 == "?" || $0 == "[" }
    }

    /// Compiles `pattern`. Throws when a `[` set is not closed.
    public init(_ pattern: String) throws(FleetError) {
        self.pattern = pattern
        var tokens: [Token] = []
        let chars = Array(pattern)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            switch c {
            case "*":
                if tokens.last != .star { tokens.append(.star) }
            case "?":
                tokens.append(.any)
            case "\\":
                i += 1
                tokens.append(.literal(i < chars.count ? chars[i] : "\\"))
            case "[":
                var j = i + 1
                var negated = false
                if j < chars.count, chars[j] == "!" || chars[j] == "^" {
                    negated = true
                    j += 1
                }
                var items: [SetItem] = []
                var first = true
                while j < chars.count, chars[j] != "]" || first {
                    first = false
                    let lower = chars[j]
                    if j + 2 < chars.count, chars[j + 1] == "-", chars[j + 2] != "]" {
                        items.append(.range(lower, chars[j + 2]))
                        j += 3
                    } else {
                        items.append(.single(lower))
                        j += 1
                    }
                }
                guard j < chars.count else {
                    throw FleetError(.invalidArgument, "The pattern \"\(pattern)\" has a '[' without a closing ']'.")
                }
                tokens.append(.set(negated: negated, items: items))
                i = j
            default:
                tokens.append(.literal(c))
            }
            i += 1
        }
        self.tokens = tokens
    }

    /// Whether the whole of `text` matches. With `caseInsensitive`, letters match either case.
    public func matches(_ text: String, caseInsensitive: Bool = false) -> Bool {
        let input = Array(caseInsensitive ? text.uppercased() : text)
        // Iterative matcher with single-star backtracking (linear in practice, no recursion).
        var t = 0, s = 0
        var starToken = -1, starInput = 0
        while s < input.count {
            if t < tokens.count, tokens[t] != .star, matchOne(tokens[t], input[s], caseInsensitive) {
                t += 1
                s += 1
            } else if t < tokens.count, tokens[t] == .star {
                starToken = t
                starInput = s
                t += 1
            } else if starToken >= 0 {
                t = starToken + 1
                starInput += 1
                s = starInput
            } else {
                return false
            }
        }
        while t < tokens.count, tokens[t] == .star { t += 1 }
        return t == tokens.count
    }

    private func matchOne(_ token: Token, _ c: Character, _ fold: Bool) -> Bool {
        func norm(_ x: Character) -> Character { fold ? Character(x.uppercased()) : x }
        switch token {
        case .star: return false
        case .any: return true
        case .literal(let l): return norm(l) == c
        case .set(let negated, let items):
            let hit = items.contains { item in
                switch item {
                case .single(let x): norm(x) == c
                case .range(let lo, let hi): norm(lo) <= c && c <= norm(hi)
                }
            }
            return hit != negated
        }
    }

    public var description: String { pattern }
}
