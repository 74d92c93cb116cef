/// A configuration mistake, as one sentence naming where it is, the key, and what is allowed.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let source: String
    public let line: Int?
    public let key: String?
    public let problem: String

    public init(source: String, line: Int? = nil, key: String? = nil, problem: String) {
        self.source = source
        self.line = line
        self.key = key
        self.problem = problem
    }

    public var description: String {
        var text = source
        if let line { text += ", line \(line)" }
        text += ": "
        if let key { text += "\(key): " }
        return text + problem
    }
}
