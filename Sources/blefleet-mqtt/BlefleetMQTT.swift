import ArgumentParser
import ClientCommandLine
import FleetMQTT
import FleetMQTTSettings
import FleetRPCClient
import Logging
import ServiceLifecycle

/// `blefleet-mqtt`: the MQTT bridge of a gateway (`blefleet-mqtt(7)`). An unprivileged
/// client of `blefleetd`'s socket, which has no network itself: it publishes the fleet to a
/// broker (Home Assistant discovery, each board's state) and, with `commands: true`, carries
/// out LED commands from it.
@main
struct BlefleetMQTT: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blefleet-mqtt",
        abstract: "Bridge the boards of blefleetd to an MQTT broker, as a client of its socket.",
        discussion: """
            Reads the mqtt: section of the daemon's configuration file (blefleetd.conf(5)); topics,
            payloads and Home Assistant discovery are described in blefleet-mqtt(7). Normally
            started by systemd (blefleet-mqtt.service).
            """)

    @Option(help: ArgumentHelp("Configuration file whose mqtt: section is read (default /etc/blefleet/blefleetd.conf).", valueName: "FILE"))
    var config = "/etc/blefleet/blefleetd.conf"

    @Option(help: ArgumentHelp("The daemon's socket (default /run/blefleet/blefleetd.sock).", valueName: "PATH"))
    var socket = FleetRPCClient.defaultSocketPath

    @OptionGroup var logging: LoggingOptions

    /// The exit status of a configuration that cannot work (sysexits' EX_CONFIG), as blefleetd's.
    static let configurationStatus: Int32 = 78

    func run() async throws {
        ClientProcess.prepareSignals()

        let settings: MQTTSettings
        let password: String?
        do {
            guard let found = try MQTTSettings.load(fromConfigurationFile: config) else {
                Self.fail("\(config) has no mqtt: section, so there is nothing to bridge (see blefleetd.conf(5) and blefleet-mqtt(7))")
                throw ExitCode(Self.configurationStatus)
            }
            settings = found
            password = try settings.readPassword()
        } catch let exit as ExitCode {
            throw exit
        } catch {
            Self.fail("\(error)")
            throw ExitCode(Self.configurationStatus)
        }

        let logger = logging.bootstrap(identifier: "blefleet-mqtt")

        let bridge: MQTTBridge
        do {
            bridge = try MQTTBridge(
                configuration: MQTTBridge.Configuration(
                    url: settings.url, gateway: settings.gatewayName, username: settings.username, password: password,
                    caFile: settings.caFile, topicPrefix: settings.topicPrefix, discoveryPrefix: settings.discoveryPrefix,
                    commands: settings.commands),
                socketPath: socket, logger: logger)
        } catch {
            Self.fail("\(config): mqtt: \(error)")
            throw ExitCode(Self.configurationStatus)
        }
        logger.info(
            "starting", metadata: ["mqtt.broker": "\(settings.url)", "mqtt.gateway": "\(settings.gatewayName)", "socket": "\(socket)"])
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [ServiceGroupConfiguration.ServiceConfiguration(service: bridge)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
        logger.info("stopped")
    }

    static func fail(_ message: String) {
        ClientProcess.fail("blefleet-mqtt", message)
    }
}
