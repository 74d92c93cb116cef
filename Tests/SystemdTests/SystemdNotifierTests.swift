import Systemd
import TestSupport
import Testing

/// `sd_notify` for real: the probe sends through libsystemd to a socket the test bound.
@Suite struct SystemdNotifierTests {
    @Test func sendsEachStateAsOneDatagram() async throws {
        let socket = try NotifySocket()
        let output = try await Probe.run(["notify"], environment: Probe.environment(["NOTIFY_SOCKET": socket.path]))
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(output.value("sent") == "true,true,true,true,true")

        let messages = socket.drain()
        try #require(messages.count == 5, "\(messages)")
        // A line break in STATUS must not inject a second assignment.
        #expect(messages[0] == "STATUS=Connecting to BlueZ second line")
        #expect(messages[1] == "READY=1")
        #expect(messages[2] == "WATCHDOG=1")
        #expect(messages[3].wholeMatch(of: /RELOADING=1\nMONOTONIC_USEC=[1-9][0-9]*/) != nil, "\(messages[3])")
        #expect(messages[4] == "STOPPING=1")
    }

    @Test func reportsNotSentWhenNotSupervised() async throws {
        let output = try await Probe.run(["notify"], environment: Probe.environment())
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(output.value("sent") == "false,false,false,false,false")
    }

    @Test func failureIsAClearSentence() async throws {
        let output = try await Probe.run(
            ["notify"], environment: Probe.environment(["NOTIFY_SOCKET": "/nonexistent/blefleet/notify.sock"]))
        #expect(output.status == 1)
        #expect(
            output.value("error")
                == "Could not send \"STATUS=Connecting to BlueZ second line\" to the service manager (NOTIFY_SOCKET): No such file or directory (errno 2)."
        )
    }

    @Test func errorDescriptionUsesTheFirstLineOfTheState() {
        let error = SystemdError.notifyFailed(state: "RELOADING=1\nMONOTONIC_USEC=5", errno: 111)
        #expect(
            error.description
                == "Could not send \"RELOADING=1\" to the service manager (NOTIFY_SOCKET): Connection refused (errno 111).")
    }
}
