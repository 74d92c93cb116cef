public import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A swift-log `LogHandler` that writes one readable line per message to standard error
/// (or another file descriptor), for when journald is not the target:
///
///     2025-11-22T14:03:07.512+0100 warning blefleetd blefleet.bluez: Connect failed ble.address=F4:12:FA:6B:01:02 error="le-connection-abort-by-local"
///
/// Line breaks in the message and in metadata values are escaped (`\n`) so every entry stays
/// on one line; metadata keys are sorted. The level is coloured only when writing to a
/// terminal (and `NO_COLOR` is unset and `TERM` is not `dumb`), unless `colour` says otherwise.
public struct StderrLogHandler: SettingsLogHandler {
    /// `identifier`, the program's name, is shown before the label.
    public var settings: LogHandlerSettings
    private let fileDescriptor: Int32
    private let colour: Bool

    /// - Parameters:
    ///   - fileDescriptor: where lines go; standard error (2) by default. Not closed by the handler.
    ///   - colour: `nil` decides from the descriptor (terminal or not) and the environment.
    public init(
        label: String,
        identifier: String,
        logLevel: Logger.Level = .info,
        levelSetting: LogLevelSetting? = nil,
        fileDescriptor: Int32 = 2,
        colour: Bool? = nil,
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        settings = LogHandlerSettings(
            label: label, identifier: identifier, logLevel: logLevel, levelSetting: levelSetting,
            metadataProvider: metadataProvider)
        self.fileDescriptor = fileDescriptor
        self.colour = colour ?? Self.wantsColour(fileDescriptor: fileDescriptor)
    }

    public func log(event: LogEvent) {
        var merged = settings.metadata(of: event)
        if let error = event.error, merged["error"] == nil {
            merged["error"] = "\(String(describing: error))"
        }
        let line = format(level: event.level, message: event.message.description, metadata: merged)
        Self.emit(line, to: fileDescriptor)
    }

    /// The line (with its trailing newline) for one entry.
    func format(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var line = Self.timestamp()
        line += " "
        line += colour ? Self.coloured(level) : level.rawValue
        line += " \(identifier) \(label): "
        line += Self.escape(message)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " \(Self.escape(key))=\(Self.quoteIfNeeded(value.description))"
        }
        line += "\n"
        return line
    }

    // MARK: Formatting

    static func escape(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            return text
        }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func quoteIfNeeded(_ value: String) -> String {
        let needsQuotes =
            value.isEmpty
            || value.unicodeScalars.contains(where: {
                $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F
            })
        guard needsQuotes else { return value }
        let inner = escape(value.replacingBackslashesAndQuotes())
        return "\"\(inner)\""
    }

    static func coloured(_ level: Logger.Level) -> String {
        let code: String
        switch level {
        case .trace, .debug: code = "2"
        case .info: code = "32"
        case .notice: code = "1;32"
        case .warning: code = "33"
        case .error: code = "31"
        case .critical: code = "1;31"
        }
        return "\u{1B}[\(code)m\(level.rawValue)\u{1B}[0m"
    }

    static func wantsColour(fileDescriptor: Int32) -> Bool {
        guard isatty(fileDescriptor) == 1 else { return false }
        if getenv("NO_COLOR") != nil { return false }
        if let term = getenv("TERM"), String(cString: term) == "dumb" { return false }
        return true
    }

    /// Local time with milliseconds and UTC offset, e.g. `2025-11-22T14:03:07.512+0100`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        localtime_r(&seconds, &parts)
        var date = [CChar](repeating: 0, count: 32)
        var zone = [CChar](repeating: 0, count: 8)
        strftime(&date, date.count, "%Y-%m-%dT%H:%M:%S", &parts)
        strftime(&zone, zone.count, "%z", &parts)
        let millis = Int(now.tv_nsec / 1_000_000)
        let paddedMillis = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return text(date) + "." + paddedMillis + text(zone)
    }

    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: Output

    /// Serializes writers so lines from different threads never interleave.
    private static let writeLock = Mutex(())

    static func emit(_ line: String, to fileDescriptor: Int32) {
        var bytes = Array(line.utf8)
        writeLock.withLock { _ in
            bytes.withUnsafeMutableBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return  // Nowhere left to report a failing standard error.
                    }
                    offset += written
                }
            }
        }
    }
}

extension String {
    fileprivate func replacingBackslashesAndQuotes() -> String {
        var out = ""
        for character in self {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            default: out.append(character)
            }
        }
        return out
    }
}
