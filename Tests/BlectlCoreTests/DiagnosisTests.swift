import BlectlCore
import FleetRPC
import FleetRPCClient
import Glibc
import Testing

@Suite struct DiagnosisTests {
    @Test("An absent or dead socket: 69, the path, and how to check the daemon")
    func unreachable() {
        for code in [ENOENT, ECONNREFUSED] {
            let diagnosis = Diagnosis(.daemonUnreachable(socketPath: "/run/x.sock", errno: code))
            #expect(diagnosis.status == .unavailable)
            #expect(diagnosis.status.rawValue == 69)
            #expect(diagnosis.lines[0].contains("/run/x.sock"))
            #expect(diagnosis.lines.contains { $0.contains("systemctl status blefleetd") })
            #expect(diagnosis.lines.contains { $0.contains("--socket") && $0.contains("BLEFLEET_SOCKET") })
        }
    }

    @Test("No permission on the socket or for the method: 77 and the group hint")
    func permission() {
        for error in [
            FleetRPCClientError.daemonUnreachable(socketPath: "/run/x.sock", errno: EACCES),
            .permissionDenied(method: "led.set", message: "Read-only clients may not call led.set."),
        ] {
            let diagnosis = Diagnosis(error)
            #expect(diagnosis.status.rawValue == 77)
            #expect(diagnosis.lines.contains { $0.contains("sudo usermod -aG blefleet $USER") && $0.contains("log in again") })
        }
    }

    @Test("Other failures map to 1, bad params to 2, a vanished daemon to 69")
    func others() {
        #expect(Diagnosis(.rpcError(method: "boards.connect", code: -32001, message: "No board matched.", data: nil)).status == .failed)
        #expect(Diagnosis(.rpcError(method: "gatt.read", code: -32602, message: "Invalid params.", data: nil)).status == .usage)
        #expect(Diagnosis(.timeout(method: "boards.scan", seconds: 30)).status == .failed)
        #expect(Diagnosis(.timeout(method: "boards.scan", seconds: 30)).lines.contains { $0.contains("--timeout") })
        #expect(Diagnosis(.connectionClosed(method: "led.set")).status == .unavailable)
        #expect(Diagnosis(.malformedReply(detail: "junk")).status == .failed)
    }

    @Test("Fleet results exit 1 when any board failed")
    func fleetStatus() {
        let board = BoardAddress("AA:BB:CC:DD:EE:01")!
        let ok = BoardOutcome(address: board, name: nil, result: .success(Done()), latency: .zero)
        let failed = BoardOutcome<Done>(address: board, name: nil, result: .failure(FleetError(.timeout, "t")), latency: .zero)
        #expect(ExitStatus.of(FleetResult(outcomes: Array(repeating: ok, count: 12))) == .ok)
        #expect(ExitStatus.of(FleetResult(outcomes: Array(repeating: ok, count: 11) + [failed])) == .failed)
    }
}
