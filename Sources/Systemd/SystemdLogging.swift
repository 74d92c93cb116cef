public import Logging

/// Sets up swift-log for a daemon that may run under systemd.
public enum SystemdLogging {
    /// Calls `LoggingSystem.bootstrap` (allowed once per process) with ``JournalLogHandler``
    /// or ``StderrLogHandler`` as `target` resolves, and returns the concrete target so the
    /// caller can log it.
    ///
    /// - Parameters:
    ///   - target: `.auto` picks journald when standard error is connected to it.
    ///   - identifier: `SYSLOG_IDENTIFIER` and the name on stderr lines (e.g. `blefleetd`).
    ///   - logLevel: the level of every logger, unless `levelSetting` is given.
    ///   - levelSetting: a level every logger follows, changeable while running.
    ///   - metadataProvider: contextual metadata added to every entry.
    ///   - environment: consulted for `JOURNAL_STREAM`; `nil` reads the process environment.
    @discardableResult
    public static func bootstrap(
        target: LogTarget,
        identifier: String,
        logLevel: Logger.Level = .info,
        levelSetting: LogLevelSetting? = nil,
        metadataProvider: Logger.MetadataProvider? = nil,
        environment: [String: String]? = nil
    ) -> LogTarget {
        let resolved = target.resolved(environment: environment)
        LoggingSystem.bootstrap(
            { label, provider in
                makeHandler(
                    target: resolved, label: label, identifier: identifier, logLevel: logLevel,
                    levelSetting: levelSetting, metadataProvider: provider)
            }, metadataProvider: metadataProvider)
        return resolved
    }

    /// A handler for `target` without touching the global logging system. `.auto` is
    /// resolved from the process environment.
    public static func makeHandler(
        target: LogTarget,
        label: String,
        identifier: String,
        logLevel: Logger.Level = .info,
        levelSetting: LogLevelSetting? = nil,
        metadataProvider: Logger.MetadataProvider? = nil
    ) -> any LogHandler {
        switch target.resolved() {
        case .journal:
            return JournalLogHandler(
                label: label, identifier: identifier, logLevel: logLevel, levelSetting: levelSetting,
                metadataProvider: metadataProvider)
        case .stderr, .auto:
            return StderrLogHandler(
                label: label, identifier: identifier, logLevel: logLevel, levelSetting: levelSetting,
                metadataProvider: metadataProvider)
        }
    }
}
