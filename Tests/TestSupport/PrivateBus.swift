import Foundation

/// A private `dbus-daemon` (session configuration, no root) for tests that need a real bus
/// but no BlueZ. The daemon dies with `stop()`; tests call it from `defer`-style cleanup.
///
/// Spawned and reaped with ``ChildProcess`` (its own `waitpid`, bounded waits), not
/// Foundation's `Process`: under many concurrent tests, `Process`'s SIGCHLD monitor missed
/// a daemon's exit, and `waitUntilExit()` spun forever on a thread of Swift's cooperative
/// pool; two of those stalled the whole test run.
public final class PrivateBus: @unchecked Sendable {
    // Safe: all stored properties are immutable after init; the child is only signalled.
    public let address: String
    private let child: ChildProcess

    public init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw FixtureError("cannot make a pipe for dbus-daemon: \(String(cString: strerror(errno)))") }
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(devNull) }
        let child: ChildProcess
        do {
            child = try ChildProcess(
                "/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--print-address=1"],
                stdout: fds[1], stderr: devNull)
        } catch {
            close(fds[0])
            close(fds[1])
            throw error
        }
        close(fds[1])
        let reader = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
        // The address line, read on a thread of its own with a bound: a daemon that prints
        // nothing fails the test instead of holding this thread.
        let line = Self.firstLine(of: reader, within: 30)
        guard let line, !line.isEmpty else {
            child.signal(SIGKILL)
            child.wait(timeout: 10)
            throw FixtureError("dbus-daemon printed no address")
        }
        self.address = line
        self.child = child
    }

    private static func firstLine(of handle: FileHandle, within seconds: TimeInterval) -> String? {
        final class Box: @unchecked Sendable {
            // Safe: written by the reader thread before `done` is signalled, read after.
            var line: String?
        }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var bytes: [UInt8] = []
            var byte: UInt8 = 0
            while read(handle.fileDescriptor, &byte, 1) == 1, byte != 0x0A { bytes.append(byte) }
            box.line = String(decoding: bytes, as: UTF8.self)
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return box.line
    }

    /// Runs `body` with a fresh private bus and always stops the daemon afterwards.
    public static func with<T>(_ body: (PrivateBus) async throws -> T) async throws -> T {
        let bus = try PrivateBus()
        defer { bus.stop() }
        return try await body(bus)
    }

    public func stop() {
        child.signal(SIGKILL)
        child.wait(timeout: 10)
    }

    deinit { stop() }
}
