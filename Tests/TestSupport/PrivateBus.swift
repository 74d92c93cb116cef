import Foundation

/// A private `dbus-daemon` (session configuration, no root) for tests that need a real bus
/// but no BlueZ. The daemon dies with `stop()`; tests call it from `defer`-style cleanup.
public final class PrivateBus: @unchecked Sendable {
    // Safe: all stored properties are immutable after init; `Process` is only terminated.
    public let address: String
    private let process: Process

    public init() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var line = Data()
        let handle = out.fileHandleForReading
        while true {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([0x0A]) { break }
            line.append(byte)
        }
        let address = String(decoding: line, as: UTF8.self)
        guard !address.isEmpty else {
            process.terminate()
            throw FixtureError("dbus-daemon printed no address")
        }
        self.address = address
        self.process = process
    }

    /// Runs `body` with a fresh private bus and always stops the daemon afterwards.
    public static func with<T>(_ body: (PrivateBus) async throws -> T) async throws -> T {
        let bus = try PrivateBus()
        defer { bus.stop() }
        return try await body(bus)
    }

    public func stop() {
        if process.isRunning {
            // SIGKILL, not terminate(): a child spawned from a test thread inherits a signal
            // mask with SIGTERM blocked, so SIGTERM would leave waitUntilExit() hanging.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
