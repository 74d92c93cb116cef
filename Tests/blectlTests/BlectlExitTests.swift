import Foundation
import Glibc
import TestSupport
import Testing

@Suite("blectl exit codes and messages without a daemon")
struct BlectlExitTests {
    @Test("No socket at the path: 69, the path tried, and how to check the daemon")
    func missingSocket() async throws {
        let directory = try makeTemporaryDirectory(prefix: "blectl")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("blefleetd.sock").path
        for (arguments, environment) in [
            (["status", "--socket", path], Blectl.environment()),
            (["--socket", path, "boards"], Blectl.environment()),
            (["led", "on", "--all"], Blectl.environment(["BLEFLEET_SOCKET": path])),
        ] {
            let output = try await Blectl.run(arguments, environment: environment)
            #expect(output.status == 69, "\(output)")
            #expect(output.stdout.isEmpty)
            #expect(output.stderr.contains("Cannot connect to blefleetd at \(path): the socket does not exist."), "\(output)")
            #expect(output.stderr.contains("systemctl status blefleetd"))
            #expect(output.stderr.contains("BLEFLEET_SOCKET"))
        }
    }

    @Test("A socket nobody listens on: 69 and says nothing listens")
    func deadSocket() async throws {
        let directory = try makeTemporaryDirectory(prefix: "blectl")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("blefleetd.sock").path
        let fd = try LineJSONServer.listen(at: path, listening: false)
        defer { close(fd) }
        let output = try await Blectl.run(["temp", "--socket", path])
        #expect(output.status == 69, "\(output)")
        #expect(output.stderr.contains("Cannot connect to blefleetd at \(path): nothing is listening on it."), "\(output)")
    }

    @Test("Usage errors exit 2 with a hint", arguments: [
        (["led", "on"], "--all"),
        (["led", "blink", "--all"], "blink"),
        (["led", "on", "nano-01", "--all"], "not both"),
        (["connect"], "--all"),
        (["alias", "nano-01", "lab"], "AA:BB:CC:DD:EE:FF"),
        (["scan", "--seconds", "0"], "--seconds"),
        (["status", "--timeout", "-1"], "--timeout"),
        (["gatt", "read", "nano-01", "--service", "xyz", "--characteristic", "2a6e"], "--service"),
        (["gatt", "write", "nano-01", "--service", "2a6e", "--characteristic", "2a6e", "--value", "0"], "--value"),
        (["rpc", "daemon.status", "{nope"], "JSON-PARAMS"),
        (["rpc", "daemon.status", "42"], "object or array"),
        (["frobnicate"], "frobnicate"),
    ])
    func usage(arguments: [String], hint: String) async throws {
        let output = try await Blectl.run(arguments + ["--socket", "/nonexistent/blefleetd.sock"])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains(hint), "\(output)")
        #expect(output.stdout.isEmpty)
    }

    @Test("A socket the user may not open: 77 and the group hint",
          .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func permissionDenied() async throws {
        try await LineJSONServer.with(handler: { _, _ in }) { server in
            // The socket is root's with mode 0755 (umask): nobody else may connect.
            #expect(chmod(server.path, 0o700) == 0)
            let output = try await Blectl.run(
                ["status", "--socket", server.path],
                prefix: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
            #expect(output.status == 77, "\(output)")
            #expect(output.stderr.contains("Permission denied opening blefleetd's socket \(server.path)."), "\(output)")
            #expect(output.stderr.contains("sudo usermod -aG blefleet $USER"))
        }
    }
}
