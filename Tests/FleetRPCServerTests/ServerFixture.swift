import FleetRPC
import JSONRPC
import FleetRPCServer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
import TestSupport

/// Socket and process tests share the process's descriptors and users: run them one at a time.
@Suite(.serialized) enum SocketTests {}

/// Runs `body` against a server on a socket in a fresh temporary directory; always shuts the
/// server down and removes the directory.
func withServer(
    dispatcher: JSONRPCDispatcher,
    configure: (inout RPCServerConfiguration) -> Void = { _ in },
    logger: Logger = .silent,
    _ body: (_ path: String, _ server: RPCServer) async throws -> Void
) async throws {
    let directory = try makeTemporaryDirectory(prefix: "blefleet-rpc")
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("rpc.sock").path
    var configuration = RPCServerConfiguration(
        listener: .path(path), socketMode: 0o666, socketGroup: nil, shutdownGracePeriod: .seconds(2))
    configure(&configuration)
    let server = RPCServer(configuration: configuration, dispatcher: dispatcher, logger: logger)
    try await server.bind()
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        do {
            try await body(path, server)
        } catch {
            server.triggerGracefulShutdown()
            try? await group.waitForAll()
            throw error
        }
        server.triggerGracefulShutdown()
        try await group.waitForAll()
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func parse(_ line: String?) throws -> JSONValue {
    try JSONValue(parsing: try #require(line))
}
