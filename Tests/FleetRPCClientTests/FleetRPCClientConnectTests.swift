import FleetRPCClient
import Foundation
import Glibc
import TestSupport
import Testing

@Suite("FleetRPCClient connecting")
struct FleetRPCClientConnectTests {
    @Test("A missing socket is unreachable with ENOENT, and the message names the path")
    func missingSocket() throws {
        let directory = try makeTemporaryDirectory(prefix: "client")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("none.sock").path
        let error = #expect(throws: FleetRPCClientError.self) { try FleetRPCClient(socketPath: path) }
        #expect(error == .daemonUnreachable(socketPath: path, errno: ENOENT))
        #expect(error?.description == "Cannot connect to blefleetd at \(path): the socket does not exist.")
    }

    @Test("A socket nobody listens on is unreachable with ECONNREFUSED")
    func refused() throws {
        let directory = try makeTemporaryDirectory(prefix: "client")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("dead.sock").path
        let fd = try LineJSONServer.listen(at: path, listening: false)
        defer { close(fd) }
        let error = #expect(throws: FleetRPCClientError.self) { try FleetRPCClient(socketPath: path) }
        #expect(error == .daemonUnreachable(socketPath: path, errno: ECONNREFUSED))
        #expect(error?.description == "Cannot connect to blefleetd at \(path): nothing is listening on it.")
    }

    @Test("A path that is not a socket, or too long, says so")
    func notASocket() throws {
        let directory = try makeTemporaryDirectory(prefix: "client")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("plain").path
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        let error = #expect(throws: FleetRPCClientError.self) { try FleetRPCClient(socketPath: file) }
        #expect(error == .daemonUnreachable(socketPath: file, errno: ECONNREFUSED))
        let long = "/tmp/" + String(repeating: "x", count: 200)
        let tooLong = #expect(throws: FleetRPCClientError.self) { try FleetRPCClient(socketPath: long) }
        #expect(tooLong?.description.hasSuffix("the path is too long for a Unix socket.") == true)
    }

    @Test("EACCES is told apart from the other reasons")
    func reasons() {
        #expect(FleetRPCClientError.reason(forErrno: EACCES) == "permission to open it was denied")
        #expect(FleetRPCClientError.reason(forErrno: ENOENT) != FleetRPCClientError.reason(forErrno: ECONNREFUSED))
    }
}
