public import ArgumentParser
import Glibc
public import Logging
import Systemd

/// `--log-target` and `--log-level`, as the socket's clients that run as services
/// (blefleet-mqtt, blefleet-web) take them.
public struct LoggingOptions: ParsableArguments {
    @Option(name: .customLong("log-target"), help: ArgumentHelp("auto (default: journal under systemd, else stderr), journal or stderr.", valueName: "TARGET"))
    public var logTarget = "auto"

    @Option(name: .customLong("log-level"), help: ArgumentHelp("debug, info (default), notice, warning or error.", valueName: "LEVEL"))
    public var logLevel = "info"

    public init() {}

    public func validate() throws {
        guard (try? LogTarget(parsing: logTarget)) != nil else {
            throw ValidationError("--log-target: got \"\(logTarget)\"; one of auto, journal, stderr")
        }
        guard let level = Logger.Level(rawValue: logLevel), level != .trace, level != .critical else {
            throw ValidationError("--log-level: got \"\(logLevel)\"; one of debug, info, notice, warning, error")
        }
    }

    /// Sends the process's logs where these options say, tagged `identifier`, and returns its logger.
    public func bootstrap(identifier: String) -> Logger {
        SystemdLogging.bootstrap(
            target: (try? LogTarget(parsing: logTarget)) ?? .auto, identifier: identifier,
            levelSetting: LogLevelSetting(Logger.Level(rawValue: logLevel) ?? .info))
        return Logger(label: identifier)
    }
}

/// What a client that runs as a service does first and last.
public enum ClientProcess {
    /// A parent may hand us blocked signals (children inherit the mask); SIGTERM and SIGINT
    /// must arrive. A peer (the daemon, a broker, a browser) that closes its end must not kill us.
    public static func prepareSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes `program: message` as one line on standard error.
    public static func fail(_ program: String, _ message: String) {
        let line = Array("\(program): \(message)\n".utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
