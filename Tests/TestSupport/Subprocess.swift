public import Foundation

/// Runs a command to completion and returns its standard output; throws with its
/// standard error when it exits non-zero. For test fixtures only.
public func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil
) throws -> String {
    let result = try ChildProcess.runBlocking(executable, arguments, environment: environment, timeout: 120)
    guard result.status == 0 else {
        throw FixtureError("\(executable) \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
    }
    return result.stdout
}

/// Drains a pipe on a background thread.
final class ErrorCollector: @unchecked Sendable {
    // Safe: `data` is written by the reader thread only, and read after `done` is signalled.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    /// The pipe's whole text, once its last writer closed it. A process the child left
    /// running may hold it open: after `timeout` the test goes on with a note instead of
    /// waiting on it for ever (this may run on a thread of Swift's cooperative pool).
    func finish(timeout: TimeInterval = 30) -> String {
        guard done.wait(timeout: .now() + timeout) == .success else {
            return "(the output was still open after \(Int(timeout)) s: a process the command started holds it)"
        }
        return String(decoding: data, as: UTF8.self)
    }
}

public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The repository's top directory, found from this file's location.
public let repositoryRoot: URL = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/TestSupport/Subprocess.swift
    return url
}()

/// The executable `name` that `swift build --build-tests` put next to the test bundle.
public func builtExecutable(_ name: String) throws -> String {
    let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let candidate = URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent(name).path
    guard FileManager.default.isExecutableFile(atPath: candidate) else {
        throw FixtureError("\(name) not found at \(candidate); run `swift build --build-tests` first")
    }
    return candidate
}

/// A fresh temporary directory under $TMPDIR, removed by the caller.
public func makeTemporaryDirectory(prefix: String) throws -> URL {
    let base = URL(fileURLWithPath: NSTemporaryDirectory())
    let url = base.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// `runCommand` on a dedicated thread, so awaiting it never blocks Swift's cooperative pool
/// (which has one thread per core: blocking it stalls every other task in the test run).
public func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil
) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try runCommand(executable, arguments, environment: environment) })
        }
    }
}
