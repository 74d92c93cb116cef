import Foundation
import TestSupport

/// A child process a test talks to while it runs. Killed in `deinit` if still running, so a
/// failing test leaves nothing behind. Spawned and reaped with ``ChildProcess`` (bounded
/// waits), not Foundation's `Process`, whose exit monitor can miss a child's exit.
final class StartedProcess: @unchecked Sendable {
    // Safe: `process` and the pipes are set in init and only read afterwards; `stderrText`
    // is guarded by `lock`.
    private let process: ChildProcess
    private let out = Pipe()
    private let err = Pipe()
    private let lock = NSCondition()
    private var stderrText = ""
    private var stderrClosed = false
    private var stdoutData = Data()
    private var stdoutClosed = false

    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        for handle in [out.fileHandleForReading, err.fileHandleForReading] {
            _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
        }
        process = try ChildProcess(
            executable, arguments, environment: environment,
            stdout: out.fileHandleForWriting.fileDescriptor, stderr: err.fileHandleForWriting.fileDescriptor)
        try out.fileHandleForWriting.close()
        try err.fileHandleForWriting.close()
        Thread.detachNewThread { [self] in
            while true {
                let chunk = err.fileHandleForReading.availableData
                lock.lock()
                if chunk.isEmpty { stderrClosed = true } else { stderrText += String(decoding: chunk, as: UTF8.self) }
                lock.broadcast()
                lock.unlock()
                if chunk.isEmpty { return }
            }
        }
        Thread.detachNewThread { [self] in
            let data = out.fileHandleForReading.readDataToEndOfFile()
            lock.lock()
            stdoutData = data
            stdoutClosed = true
            lock.broadcast()
            lock.unlock()
        }
    }

    /// Waits until standard error contains `text`; throws after `timeout` seconds or at EOF.
    func waitForStderr(containing text: String, timeout: TimeInterval = 10) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        defer { lock.unlock() }
        while !stderrText.contains(text) {
            if stderrClosed { throw FixtureError("process ended without printing \"\(text)\": \(stderrText)") }
            if !lock.wait(until: deadline) { throw FixtureError("timed out waiting for \"\(text)\": \(stderrText)") }
        }
    }

    /// Waits for the process to exit (killing it after `timeout` seconds) and returns its output.
    func finish(timeout: TimeInterval = 10) throws -> ProcessOutput {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        while !(stdoutClosed && stderrClosed) {
            if !lock.wait(until: deadline) {
                lock.unlock()
                stop()
                throw FixtureError("process did not exit within \(timeout) s: \(stderrText)")
            }
        }
        lock.unlock()
        guard let status = process.wait(timeout: max(1, deadline.timeIntervalSinceNow)) else {
            stop()
            throw FixtureError("process closed its output but did not exit within \(timeout) s: \(stderrText)")
        }
        return ProcessOutput(
            status: status, stdout: String(decoding: stdoutData, as: UTF8.self),
            stderr: stderrText)
    }

    func stop() {
        process.signal(SIGKILL)
        process.wait(timeout: 10)
    }

    deinit { stop() }
}
