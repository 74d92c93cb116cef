// systemd-probe: runs the Systemd module inside an environment a test prepared (NOTIFY_SOCKET,
// WATCHDOG_USEC, LISTEN_FDS, a private journald) and reports on stdout what it saw, so the
// tests never mutate their own process environment.
//
//   systemd-probe notify                  send STATUS, READY, WATCHDOG, RELOADING, STOPPING
//   systemd-probe watchdog MS [unhealthy] run WatchdogService for MS ms, cancel, report
//   systemd-probe journal IDENTIFIER      log sample entries through SystemdLogging(.journal)
//   systemd-probe listen                  take the activated socket, answer one connection
import Logging
import ServiceLifecycle
import Systemd

#if canImport(Glibc)
import Glibc
#endif

func report(_ line: String) {
    print(line)
    fflush(nil)
}

func fail(_ message: String) -> Never {
    report("error=\(message)")
    exit(1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { fail("usage: systemd-probe notify|watchdog|journal|listen") }

switch command {
case "notify":
    let notifier = SystemdNotifier()
    do {
        let sent = [
            try notifier.status("Connecting to BlueZ\nsecond line"),
            try notifier.ready(),
            try notifier.watchdog(),
            try notifier.reloading(),
            try notifier.stopping(),
        ]
        report("sent=\(sent.map(String.init).joined(separator: ","))")
    } catch {
        fail("\(error)")
    }

case "watchdog":
    guard arguments.count >= 2, let milliseconds = Int(arguments[1]) else { fail("watchdog needs MS") }
    let unhealthy = arguments.dropFirst(2).contains("unhealthy")
    let notifier = SystemdNotifier()
    do {
        let watchdog = try Watchdog.fromEnvironment()
        // The cached answer must not change when the environment does.
        unsetenv("WATCHDOG_USEC")
        guard try Watchdog.fromEnvironment() == watchdog else { fail("watchdog answer was not cached") }
        report(
            watchdog.map { "timeout=\($0.timeout) interval=\($0.pingInterval)" } ?? "watchdog=none")
        let healthCheck: (@Sendable () async -> Bool)? = unhealthy ? { @Sendable in false } : nil
        let service = WatchdogService(
            watchdog: watchdog, notifier: notifier,
            logger: Logger(label: "probe", factory: { StderrLogHandler(label: $0, identifier: "systemd-probe") }),
            isHealthy: healthCheck)
        let clock = ContinuousClock()
        let start = clock.now
        let task = Task { try await service.run() }
        try await Task.sleep(for: .milliseconds(milliseconds))
        task.cancel()
        try await task.value
        let elapsed = start.duration(to: clock.now)
        report("elapsed.ms=\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)")
        try notifier.status("cancelled")
        try await Task.sleep(for: .milliseconds(300))
        try notifier.status("exiting")
        report("stopped")
    } catch {
        fail("\(error)")
    }

case "journal":
    guard arguments.count >= 2 else { fail("journal needs IDENTIFIER") }
    let resolved = SystemdLogging.bootstrap(
        target: .journal, identifier: arguments[1], logLevel: .debug,
        metadataProvider: Logger.MetadataProvider { ["client.uid": "1000"] })
    report("target=\(resolved)")
    var logger = Logger(label: "blefleet.probe")
    logger[metadataKey: "ble.address"] = "F4:12:FA:6B:01:02"
    logger.info("Board connected", metadata: ["rpc.method": "led.set"]); report("line.info=\(#line)")
    logger.warning(
        "Odd values", metadata: ["dump": "first line\nsecond line", "message": "not the message", "§bad-key!": "x"])
    report("line.warning=\(#line - 2)")
    logger.error("Failed", error: SystemdError.unknownLogTarget("syslog")); report("line.error=\(#line)")
    logger.debug("Detail"); report("line.debug=\(#line)")
    // Larger than a datagram: libsystemd passes it in a memfd.
    logger.info("Large", metadata: ["blob": "\(String(repeating: "0123456789abcdef", count: 20_000))"])
    report("function=\(#function)")

case "listen":
    do {
        let sockets = try ActivatedSocket.fromEnvironment()
        report("sockets=\(sockets.map { "\($0.fileDescriptor):\($0.name)" }.joined(separator: ","))")
        report("LISTEN_FDS=\(getenv("LISTEN_FDS").map { String(cString: $0) } ?? "unset")")
        guard let socket = sockets.first else { fail("no sockets") }
        let connection = accept(socket.fileDescriptor, nil, nil)
        guard connection >= 0 else { fail("accept: \(errno)") }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(connection, &buffer, buffer.count)
        let received = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self)
        let answer = Array("fd \(socket.fileDescriptor) (\(socket.name)) got: \(received)".utf8)
        _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
        close(connection)
        report("answered")
    } catch {
        fail("\(error)")
    }

default:
    fail("unknown command \(command)")
}
