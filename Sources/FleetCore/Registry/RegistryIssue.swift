/// A problem found while loading the registry, for logs and `status` output.
public struct RegistryIssue: Sendable, Hashable, CustomStringConvertible {
    /// How bad it is.
    public enum Severity: String, Sendable, Hashable {
        /// Housekeeping (stale temporary file removed).
        case notice
        /// Something could not be cleaned up.
        case warning
        /// The registry file was bad; its boards were not loaded.
        case error
    }

    /// The file concerned.
    public let path: String
    /// Where the bad file was moved, if it was.
    public let movedTo: String?
    /// What is wrong, as a clause ("it is not valid JSON …").
    public let reason: String
    public let severity: Severity

    public init(path: String, movedTo: String?, reason: String, severity: Severity) {
        self.path = path
        self.movedTo = movedTo
        self.reason = reason
        self.severity = severity
    }

    public var description: String {
        switch severity {
        case .error:
            let moved = movedTo.map { " It was moved to \($0); the registry starts empty." }
                ?? " It was left in place and will not be overwritten; the registry is not saved until it is fixed."
            return "The board registry \(path) was not loaded: \(reason).\(moved)"
        case .notice, .warning:
            return "\(path): \(reason)."
        }
    }
}
