import Foundation
import Systemd
import Testing
import TestSupport

/// Socket activation for real: `systemd-socket-activate` listens, then execs the probe with
/// the listening socket as fd 3; the probe accepts one connection and answers on it.
@Suite struct ActivatedSocketTests {
    @Test func receivesTheListeningSocketWithItsName() async throws {
        let directory = try makeTemporaryDirectory(prefix: "activate")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("rpc.sock").path
        let activator = try StartedProcess(
            "/usr/bin/systemd-socket-activate", ["-l", path, "--fdname=rpc", try Probe.path(), "listen"],
            environment: Probe.environment())
        defer { activator.stop() }
        try activator.waitForStderr(containing: "Listening on")

        let reply = try exchange(socketPath: path, sending: "hello")
        #expect(reply == "fd 3 (rpc) got: hello")

        let output = try activator.finish()
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(output.value("sockets") == "3:rpc")
        // Unset by default so children do not inherit them.
        #expect(output.value("LISTEN_FDS") == "unset")
    }

    @Test func noSocketsWithoutActivation() async throws {
        let output = try await Probe.run(["listen"], environment: Probe.environment())
        #expect(output.value("sockets") == "")
        #expect(output.value("error") == "no sockets")
    }

    @Test func socketsForAnotherProcessAreIgnored() async throws {
        let output = try await Probe.run(
            ["listen"], environment: Probe.environment(["LISTEN_FDS": "1", "LISTEN_PID": "1"]))
        #expect(output.value("sockets") == "")
    }

    @Test func invalidActivationEnvironmentIsAClearError() async throws {
        let output = try await Probe.run(
            ["listen"], environment: Probe.environment(["LISTEN_FDS": "1", "LISTEN_PID": "self"]))
        // LISTEN_PID must be a process id; libsystemd rejects "self".
        #expect(output.status == 1)
        #expect(output.value("error")?.hasPrefix("Could not take over the sockets passed by the service manager") == true,
                "\(output.stdout)")
    }
}
