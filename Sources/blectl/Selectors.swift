import ArgumentParser
import FleetRPC
import JSONRPC

/// Turns SELECTOR arguments and `--all` into a ``Selection``.
enum Selectors {
    /// `nil` when nothing was given (the caller decides whether that means all or is an error).
    static func selection(_ patterns: [String], all: Bool) throws -> Selection? {
        if all {
            guard patterns.isEmpty else {
                throw ValidationError("Give board selectors or --all, not both.")
            }
            return .all
        }
        guard !patterns.isEmpty else { return nil }
        if let empty = patterns.first(where: { $0.isEmpty }) {
            throw ValidationError("An empty selector \(JSONValue.string(empty)) selects no board.")
        }
        do {
            return try Selection(parsing: patterns)
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// Like ``selection(_:all:)`` but requires a selector; `what` completes the hint.
    static func required(_ patterns: [String], all: Bool, example: String) throws -> Selection {
        guard let selection = try selection(patterns, all: all) else {
            throw ValidationError(
                "Name the boards (address, name, alias or a quoted glob such as 'lab-*'), or pass --all for every board; for example: \(example)")
        }
        return selection
    }
}
