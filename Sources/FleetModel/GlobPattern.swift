#if canImport(Glibc)
import Glibc
#endif

/// A shell-style pattern: `*` any run, `?` one character, `[abc]`, `[a-z]`, `[!a]` / `[^a]`
/// sets, `\` escapes the next character; matched against whole strings by `fnmatch(3)`.
public struct GlobPattern: Sendable, Hashable, CustomStringConvertible {
    /// The pattern as written.
    public let pattern: String

    /// Whether `text` contains glob metacharacters (`*`, `?`, `[`).
    public static func hasMetacharacters(_ text: String) -> Bool {
        text.contains { $0 == "*" || $0 == "?" || $0 == "[" }
    }

    /// Checks `pattern`: `fnmatch(3)` would read a `[` without its `]` as a plain `[`, while
    /// whoever typed it meant a set, so that is refused.
    public init(_ pattern: String) throws(FleetError) {
        guard !Self.hasUnclosedSet(pattern) else {
            throw FleetError(.invalidArgument, "The pattern \"\(pattern)\" has a '[' without a closing ']'.")
        }
        self.pattern = pattern
    }

    /// Whether the whole of `text` matches. With `caseInsensitive`, letters match either case.
    public func matches(_ text: String, caseInsensitive: Bool = false) -> Bool {
        fnmatch(pattern, text, caseInsensitive ? Self.caseFold : 0) == 0
    }

    /// GNU's `FNM_CASEFOLD` (`<fnmatch.h>`; Swift's Glibc module leaves the GNU flags out).
    private static let caseFold: Int32 = 1 << 4

    private static func hasUnclosedSet(_ pattern: String) -> Bool {
        let scalars = Array(pattern.unicodeScalars)
        var i = 0
        while i < scalars.count {
            switch scalars[i] {
            case "\\":
                i += 2
            case "[":
                var j = i + 1
                if j < scalars.count, scalars[j] == "!" || scalars[j] == "^" { j += 1 }
                if j < scalars.count, scalars[j] == "]" { j += 1 }  // a leading ] is a member
                while j < scalars.count, scalars[j] != "]" { j += 1 }
                guard j < scalars.count else { return true }
                i = j + 1
            default:
                i += 1
            }
        }
        return false
    }

    public var description: String { pattern }
}
