import ArgumentParser
import BlefleetDaemon
import Foundation
import Logging
import Systemd

/// `blefleetd`: the one owner of the Bluetooth adapter; serves the board fleet to
/// unprivileged clients (`blectl`, scripts) over JSON-RPC on a Unix socket.
@main
struct Blefleetd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blefleetd",
        abstract: "Own BlueZ adapters and serve a fleet of BLE boards over JSON-RPC.",
        discussion: """
            Flags override the configuration file; see blefleetd(8) and blefleetd.conf(5).
            Normally started by systemd (blefleetd.service, blefleetd.socket).
            """,
        version: Daemon.version)

    @Option(help: ArgumentHelp("Configuration file (default /etc/blefleet/blefleetd.conf; a missing default file is fine).", valueName: "FILE"))
    var config: String?

    @Option(help: ArgumentHelp("Unix socket to serve (default /run/blefleet/blefleetd.sock).", valueName: "PATH"))
    var socket: String?

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Where the board registry is kept (default /var/lib/blefleet).", valueName: "DIR"))
    var stateDirectory: String?

    @Option(help: ArgumentHelp(
        "Adapter to own: hci0 (default) or its address; give it once per adapter, or `all` for every adapter BlueZ shows.",
        valueName: "hci0|ADDRESS|all"))
    var adapter: [String] = []

    @Option(help: ArgumentHelp("D-Bus bus BlueZ is on: system (default) or an address.", valueName: "system|ADDRESS"))
    var bus: String?

    @Option(name: .customLong("log-target"), help: ArgumentHelp("auto (default: journal under systemd, else stderr), journal or stderr.", valueName: "TARGET"))
    var logTarget: String?

    func run() async throws {
        // A parent may hand us blocked signals (children inherit the mask); SIGTERM, SIGINT
        // and SIGHUP must arrive.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)

        let path = config ?? "/etc/blefleet/blefleetd.conf"
        let required = config != nil
        let overrides = DaemonConfiguration.Overrides(
            socket: socket, stateDirectory: stateDirectory, adapter: adapter, bus: bus, logTarget: logTarget)
        let load: @Sendable () throws -> DaemonConfiguration = {
            var configuration = DaemonConfiguration()
            try configuration.apply(file: path, required: required)
            try configuration.apply(overrides)
            return configuration
        }
        let configuration: DaemonConfiguration
        do {
            configuration = try load()
        } catch {
            Self.fail("\(error)")
            throw ExitCode(DaemonExit.configuration)
        }

        let level = LogLevelSetting(Logger.Level(rawValue: configuration.logLevel) ?? .info)
        SystemdLogging.bootstrap(
            target: LogTarget(rawValue: configuration.logTarget.rawValue) ?? .auto, identifier: "blefleetd",
            levelSetting: level)
        let logger = Logger(label: "blefleetd")

        do {
            try await Daemon(configuration: configuration, logger: logger, logLevel: level, reread: load).run()
        } catch let exit as DaemonExit {
            logger.critical("\(exit.message)")
            throw ExitCode(exit.status)
        }
    }

    static func fail(_ message: String) {
        FileHandle.standardError.write(Data("blefleetd: \(message)\n".utf8))
    }
}
