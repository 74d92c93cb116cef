public import Logging

/// What blefleet's log handlers share: who logs (label, identifier), at which level (the
/// logger's own once set, else a shared ``LogLevelSetting``'s, else `info`), and with which
/// metadata. ``JournalLogHandler`` and ``StderrLogHandler`` differ only in where entries go.
public struct LogHandlerSettings: Sendable {
    /// The logger's label (`Logger(label:)`).
    public let label: String
    /// The program's name (e.g. `blefleetd`).
    public let identifier: String
    /// A level shared with other loggers and changeable while running (e.g. on SIGHUP).
    public let levelSetting: LogLevelSetting?
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private var ownLevel: Logger.Level?

    public init(
        label: String, identifier: String, logLevel: Logger.Level, levelSetting: LogLevelSetting?,
        metadataProvider: Logger.MetadataProvider?
    ) {
        self.label = label
        self.identifier = identifier
        self.levelSetting = levelSetting
        self.ownLevel = levelSetting == nil ? logLevel : nil
        self.metadataProvider = metadataProvider
    }

    /// The logger's own level once set, else the shared setting's (if any).
    public var logLevel: Logger.Level {
        get { ownLevel ?? levelSetting?.level ?? .info }
        set { ownLevel = newValue }
    }

    /// The metadata of one entry: the handler's, overridden by the provider's, overridden by
    /// the entry's own (the way swift-log's own handlers merge them).
    func metadata(of event: LogEvent) -> Logger.Metadata {
        .effective(handler: metadata, provider: metadataProvider, event: event.metadata)
    }
}

/// A `LogHandler` whose level and metadata are kept in ``LogHandlerSettings``.
public protocol SettingsLogHandler: LogHandler {
    var settings: LogHandlerSettings { get set }
}

extension SettingsLogHandler {
    public var label: String { settings.label }
    public var identifier: String { settings.identifier }
    public var levelSetting: LogLevelSetting? { settings.levelSetting }

    public var logLevel: Logger.Level {
        get { settings.logLevel }
        set { settings.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { settings.metadata }
        set { settings.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { settings.metadataProvider }
        set { settings.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { settings.metadata[key] }
        set { settings.metadata[key] = newValue }
    }
}
