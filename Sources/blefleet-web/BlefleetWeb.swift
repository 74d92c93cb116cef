import ArgumentParser
import ClientCommandLine
import FleetRPCClient
import FleetWeb
import Glibc
import Hummingbird
import Logging
import ServiceLifecycle

/// `blefleet-web`: the gateway's web face (`blefleet-web(8)`). An unprivileged client of
/// `blefleetd`'s socket, which has no network itself: a live dashboard of the fleet and
/// Prometheus metrics over HTTP, on loopback unless told otherwise (and then only with
/// passwords).
@main
struct BlefleetWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blefleet-web",
        abstract: "Serve a live dashboard of blefleetd's boards and Prometheus metrics over HTTP.",
        discussion: """
            GET / is the dashboard, GET /metrics the metrics, GET /events the page's event stream and
            POST /rpc passes the page's JSON-RPC calls to the daemon (blefleet-web(8)). Listening beyond
            this machine needs --auth-file. Normally started by systemd (blefleet-web.service).
            """)

    @Option(help: ArgumentHelp("The daemon's socket (default /run/blefleet/blefleetd.sock).", valueName: "PATH"))
    var socket = FleetRPCClient.defaultSocketPath

    @Option(help: ArgumentHelp("Address and port to serve HTTP on (default 127.0.0.1:8477; [::1]:8477 for IPv6).", valueName: "HOST:PORT"))
    var listen = ListenAddress.default.description

    @Option(name: .customLong("auth-file"), help: ArgumentHelp("USER:HASH lines (crypt(3) hashes: htpasswd -nB USER, mkpasswd -m yescrypt); every request then needs one of them (HTTP basic authentication). Required beyond loopback.", valueName: "FILE"))
    var authFile: String?

    @Option(name: .customLong("max-connections"), help: ArgumentHelp("Connections open at once; more are closed as they come (default 512).", valueName: "N"))
    var maxConnections = WebLimits().connections

    @Option(name: .customLong("max-connections-per-address"), help: ArgumentHelp("Connections open at once from one address (default 128); at this cap or --max-connections a new connection takes the place of the one idle longest.", valueName: "N"))
    var maxConnectionsPerAddress = WebLimits().connectionsPerAddress

    @Option(name: .customLong("max-streams-per-user"), help: ArgumentHelp("Event streams (a page each) one user holds open at once (default 32); more are answered 429.", valueName: "N"))
    var maxStreamsPerUser = WebLimits().streamsPerUser

    @Option(name: .customLong("idle-timeout"), help: ArgumentHelp("Seconds a connection may send nothing (not even a whole request head) before it is closed (default 30).", valueName: "SECONDS"))
    var idleTimeout = 30

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (1...65_536).contains(maxConnections) else {
            throw ValidationError("--max-connections \(maxConnections): give a number from 1 to 65536")
        }
        guard (1...65_536).contains(maxConnectionsPerAddress) else {
            throw ValidationError("--max-connections-per-address \(maxConnectionsPerAddress): give a number from 1 to 65536")
        }
        guard (1...65_536).contains(maxStreamsPerUser) else {
            throw ValidationError("--max-streams-per-user \(maxStreamsPerUser): give a number from 1 to 65536")
        }
        guard (1...3600).contains(idleTimeout) else {
            throw ValidationError("--idle-timeout \(idleTimeout): give a number of seconds from 1 to 3600")
        }
    }

    /// The exit status of a setting that cannot work (sysexits' EX_CONFIG), as blefleetd's.
    static let configurationStatus: Int32 = 78

    func run() async throws {
        ClientProcess.prepareSignals()

        let address: ListenAddress
        let auth: AuthFile?
        do {
            address = try ListenAddress(parsing: listen)
            auth = try authFile.map { path throws(WebConfigurationError) in try AuthFile(path: path) }
            if auth == nil && !address.isLoopback {
                throw WebConfigurationError(
                    "listening on \(address) lets other machines in, so it needs --auth-file with users and password hashes (blefleet-web(8)); without it, listen on loopback (127.0.0.1 or [::1])")
            }
        } catch {
            Self.fail("\(error)")
            throw ExitCode(Self.configurationStatus)
        }

        let logger = logging.bootstrap(identifier: "blefleet-web")

        let served: Logger.Metadata = [
            "listen": "\(address)", "socket": "\(socket)",
            "auth": "\(auth.map { "\($0.userCount) user(s) from \(authFile ?? "")" } ?? "none (loopback only)")",
        ]
        let feed = FleetFeed(socketPath: socket, logger: logger)
        var limits = WebLimits()
        limits.connections = maxConnections
        limits.connectionsPerAddress = maxConnectionsPerAddress
        limits.streamsPerUser = maxStreamsPerUser
        limits.idleTimeout = .seconds(Int64(idleTimeout))
        let app = Application(
            router: WebServer.router(feed: feed, auth: auth, limits: limits, logger: logger),
            server: WebServer.server(limits: limits, logger: logger),
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { _ in logger.notice("serving", metadata: served) },
            logger: logger)
        // The feed stops first (its pages' streams end), then the HTTP server.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    ServiceGroupConfiguration.ServiceConfiguration(service: app),
                    ServiceGroupConfiguration.ServiceConfiguration(service: feed),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        do {
            try await group.run()
        } catch {
            Self.fail("\(error)")
            throw ExitCode(1)
        }
        logger.info("stopped")
    }

    static func fail(_ message: String) {
        ClientProcess.fail("blefleet-web", message)
    }
}
