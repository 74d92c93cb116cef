import Foundation
import TestSupport

/// The `blefleetd` that `swift build --build-tests` puts next to the test bundle.
enum BlefleetdBinary {
    static func path() throws -> String {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let candidate = URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("blefleetd").path
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            throw FixtureError("blefleetd not found at \(candidate); run `swift build --build-tests` first")
        }
        return candidate
    }

    /// Runs blefleetd with `arguments` and returns its exit status and standard error. Used
    /// only where the daemon exits at once (help, usage and start-up errors); killed after 20 s.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path())
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        unblockSignalsOnThisThread()
        try process.run()
        let stderr = Collector(err.fileHandleForReading)
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        if exited.wait(timeout: .now() + 20) == .timedOut {
            process.terminate()
            exited.wait()
        }
        return (process.terminationStatus, stdout, stderr.finish())
    }
}

/// Drains a pipe on its own thread.
final class Collector: @unchecked Sendable {
    // Safe: `data` is written by the reader thread only, and read after `done` is signalled.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func finish() -> String {
        done.wait()
        return String(decoding: data, as: UTF8.self)
    }
}
