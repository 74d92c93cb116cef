public import Logging
import Synchronization

/// A log level shared by every logger of a process, changeable while it runs (e.g. on
/// `SIGHUP`): handlers made with it follow it unless their own logger's `logLevel` was set.
public final class LogLevelSetting: Sendable {
    private let rawLevel: Atomic<Int>

    public init(_ level: Logger.Level) {
        rawLevel = Atomic(Self.index(of: level))
    }

    public var level: Logger.Level {
        get { Logger.Level.allCases[rawLevel.load(ordering: .relaxed)] }
        set { rawLevel.store(Self.index(of: newValue), ordering: .relaxed) }
    }

    private static func index(of level: Logger.Level) -> Int {
        Logger.Level.allCases.firstIndex(of: level) ?? 0
    }
}
