import CSystemd
public import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A swift-log `LogHandler` that writes structured entries to journald with
/// `sd_journal_sendv(3)`.
///
/// Each entry carries `MESSAGE`, `PRIORITY` (syslog level), `SYSLOG_IDENTIFIER`,
/// `LOGGER_LABEL`, `CODE_FILE`, `CODE_LINE`, `CODE_FUNC`, `ERROR` when the event carries an
/// error, and one field per metadata key (handler, metadata provider and per-message metadata)
/// named by ``fieldName(forMetadataKey:)``: `ble.address` becomes `BLE_ADDRESS`. Values may
/// have any length and contain line breaks.
///
/// If journald cannot be reached (`sd_journal_sendv` fails), the entry is written to standard
/// error instead so it is not lost.
public struct JournalLogHandler: SettingsLogHandler {
    /// `label` is stored as `LOGGER_LABEL`; `identifier` as `SYSLOG_IDENTIFIER`, what
    /// `journalctl -t` filters on (normally the executable's name).
    public var settings: LogHandlerSettings

    /// Fields the handler sets itself; metadata keys mapping to one of these get a `META_` prefix.
    public static let reservedFields: Set<String> = [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "LOGGER_LABEL", "CODE_FILE", "CODE_LINE",
        "CODE_FUNC", "ERROR",
    ]

    public init(
        label: String,
        identifier: String,
        logLevel: Logger.Level = .info,
        levelSetting: LogLevelSetting? = nil,
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        settings = LogHandlerSettings(
            label: label, identifier: identifier, logLevel: logLevel, levelSetting: levelSetting,
            metadataProvider: metadataProvider)
    }

    public func log(event: LogEvent) {
        let merged = settings.metadata(of: event)
        var fields: [(String, String)] = [
            ("MESSAGE", event.message.description),
            ("PRIORITY", String(event.level.syslogPriority)),
            ("SYSLOG_IDENTIFIER", identifier),
            ("LOGGER_LABEL", label),
            ("CODE_FILE", event.file),
            ("CODE_LINE", String(event.line)),
            ("CODE_FUNC", event.function),
        ]
        if let error = event.error {
            fields.append(("ERROR", String(describing: error)))
        }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            guard let name = Self.fieldName(forMetadataKey: key) else { continue }
            fields.append((name, value.description))
        }
        let result = Self.send(fields)
        if result < 0 {
            var fallback = StderrLogHandler(
                label: label, identifier: identifier, colour: false, metadataProvider: metadataProvider)
            fallback.settings = settings
            var annotated = event
            var extra = event.metadata ?? [:]
            extra["journal.error"] = "\(SystemdError.explain(-result))"
            annotated.metadata = extra
            fallback.log(event: annotated)
        }
    }

    /// Sends `KEY=value` fields in one `sd_journal_sendv` call; returns its result.
    static func send(_ fields: [(String, String)]) -> Int32 {
        // One contiguous buffer with every "KEY=value", then iovecs into it.
        var buffer: [UInt8] = []
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(fields.count)
        for (name, value) in fields {
            let start = buffer.count
            buffer.append(contentsOf: name.utf8)
            buffer.append(UInt8(ascii: "="))
            buffer.append(contentsOf: value.utf8)
            ranges.append(start..<buffer.count)
        }
        return buffer.withUnsafeMutableBytes { bytes in
            let base = bytes.baseAddress!
            let vectors = ranges.map { range in
                iovec(iov_base: base + range.lowerBound, iov_len: range.count)
            }
            return vectors.withUnsafeBufferPointer { vectors in
                sd_journal_sendv(vectors.baseAddress, Int32(vectors.count))
            }
        }
    }
}
