public import Foundation

/// A child process spawned with `posix_spawn` and reaped with `waitpid` — independent of
/// Foundation's `Process` monitor — with a clean signal mask and default dispositions
/// (threads of the test process block most signals; children must not inherit that).
public final class ChildProcess: @unchecked Sendable {
    // Safe: `pid` is immutable; `exitStatus` is only touched under `lock`.
    public let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `executable` with `arguments`. Output goes to the given file descriptors
    /// (dup'ed into the child; the caller keeps and closes its own).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        stdout: Int32, stderr: Int32
    ) throws {
        // Only 0, 1 and 2 reach the child: the descriptors given for its output are marked
        // close-on-exec (dup2 clears the flag on the copies at 1 and 2), so a child that
        // daemonizes cannot keep a caller's pipe open; and every other descriptor is closed
        // in the child, because not all of the test process's descriptors are close-on-exec
        // (NIO accepts connections without SOCK_CLOEXEC): a daemon started while another
        // test's server holds connections would otherwise keep those connections alive.
        for fd in [stdout, stderr] { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        guard Self.addCloseFrom(&actions, 3) == 0 else {
            throw FixtureError("cannot ask posix_spawn to close the test's descriptors in \(executable)")
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { env.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, env)
        guard result == 0 else {
            throw FixtureError("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which Swift's Glibc module
    /// does not declare.
    private static let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("glibc 2.34 or later is needed: posix_spawn_file_actions_addclosefrom_np is missing")
        }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// The exit status (128 + signal for a killed child) once it has exited, else nil.
    public var status: Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let exitStatus { return exitStatus }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        let signal = raw & 0x7f
        exitStatus = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        return exitStatus
    }

    public var isRunning: Bool { status == nil }

    /// Waits up to `timeout` for the child to exit; nil if it is still running.
    @discardableResult
    public func wait(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let status { return status }
            if Date() >= deadline { return nil }
            usleep(5_000)
        }
    }

    public func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// SIGTERM, then waits (bounded; SIGKILL after) and returns the exit status.
    @discardableResult
    public func terminate(timeout: TimeInterval = 15) -> Int32 {
        if let status { return status }
        signal(SIGTERM)
        if let status = wait(timeout: timeout) { return status }
        signal(SIGKILL)
        return wait(timeout: 10) ?? -1
    }

    /// Waits up to `timeout` for the child to exit without holding a thread; nil if still running.
    public func exit(timeout: Duration) async -> Int32? {
        try? await eventually("the child exits", within: timeout, every: .milliseconds(10)) { status != nil }
        return status
    }

    /// `runBlocking` on a dedicated thread, so awaiting it never blocks Swift's cooperative
    /// pool (one thread per core: blocking it stalls every other test in the process).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, timeout: TimeInterval = 30
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result {
                    try runBlocking(executable, arguments, environment: environment, timeout: timeout)
                })
            }
        }
    }

    /// Runs a command to completion (SIGKILL after `timeout`) and returns its status and output.
    public static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, timeout: TimeInterval = 30
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let out = Pipe()
        let err = Pipe()
        for handle in [out.fileHandleForReading, err.fileHandleForReading] {
            _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
        }
        let child = try ChildProcess(
            executable, arguments, environment: environment,
            stdout: out.fileHandleForWriting.fileDescriptor, stderr: err.fileHandleForWriting.fileDescriptor)
        try out.fileHandleForWriting.close()
        try err.fileHandleForWriting.close()
        let stderr = ErrorCollector(err.fileHandleForReading)
        let stdout = ErrorCollector(out.fileHandleForReading)
        let status = child.wait(timeout: timeout) ?? {
            child.signal(SIGKILL)
            return child.wait(timeout: 10) ?? -1
        }()
        return (status, stdout.finish(), stderr.finish())
    }
}
