import Foundation

/// `mosquitto_sub` and `mosquitto_pub` against the broker: an independent client to check
/// what the code under test published, and to publish to it.
extension MosquittoBroker {
    public static let subscribeExecutable = "/usr/bin/mosquitto_sub"
    public static let publishExecutable = "/usr/bin/mosquitto_pub"

    func clientArguments(username: String?, password: String?) -> [String] {
        var arguments = ["-h", caFile == nil ? "127.0.0.1" : "localhost", "-p", String(port)]
        if let caFile { arguments += ["--cafile", caFile] }
        if let username { arguments += ["-u", username] }
        if let password { arguments += ["-P", password] }
        return arguments
    }

    /// Runs `mosquitto_sub -v` until it received `count` messages on `topic` (a filter)
    /// and returns them as "topic payload" lines; throws when they do not come within
    /// `timeout` seconds (with what did come).
    public func subscribe(
        _ topic: String, count: Int = 1, timeout: Int = 10, username: String? = nil, password: String? = nil
    ) async throws -> [String] {
        let arguments = clientArguments(username: username, password: password)
            + ["-t", topic, "-v", "-q", "1", "-C", String(count), "-W", String(timeout)]
        let result = try await ChildProcess.run(Self.subscribeExecutable, arguments, timeout: TimeInterval(timeout + 10))
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        guard result.status == 0 else {
            throw FixtureError("mosquitto_sub \(topic) exited \(result.status) after \(lines): \(result.stderr)")
        }
        return lines
    }

    /// Runs `mosquitto_pub` (QoS 1: it returns once the broker has the message).
    public func publish(
        _ topic: String, _ payload: String, retain: Bool = false, username: String? = nil, password: String? = nil
    ) async throws {
        var arguments = clientArguments(username: username, password: password)
            + ["-t", topic, "-m", payload, "-q", "1"]
        if retain { arguments.append("-r") }
        _ = try await runProcess(Self.publishExecutable, arguments)
    }

    /// Starts `mosquitto_sub -v` on `topic` in the background and returns once the broker has
    /// it subscribed, so nothing published afterwards is missed: a retained probe on a topic
    /// of its own, subscribed to as well, has come back (and is left out of its lines). Read
    /// its lines as they come.
    public func startSubscriber(_ topic: String, count: Int, timeout: Int = 20) async throws -> MosquittoSubscriber {
        let probe = "blefleet-test-probe/\(UUID().uuidString)"
        try await publish(probe, "subscribed", retain: true)
        let arguments = clientArguments(username: nil, password: nil)
            + ["-t", probe, "-t", topic, "-v", "-q", "1", "-C", String(count + 1), "-W", String(timeout)]
        let subscriber = try MosquittoSubscriber(arguments, probeTopic: probe)
        try await subscriber.waitUntilSubscribed()
        return subscriber
    }
}

/// A `mosquitto_sub` running in the background, its output collected line by line.
public final class MosquittoSubscriber: @unchecked Sendable {
    // Safe: `received` and `ended` are only touched under `lock`; `child` is immutable
    // (and thread-safe).
    private let child: ChildProcess
    private let lock = NSLock()
    private var received = Data()
    /// The reader saw the end of the output: no more lines will come.
    private var ended = false
    /// The probe's topic: its line says the subscription is in place, and is no line of ours.
    private let probeTopic: String

    init(_ arguments: [String], probeTopic: String) throws {
        self.probeTopic = probeTopic
        let pipe = Pipe()
        _ = fcntl(pipe.fileHandleForReading.fileDescriptor, F_SETFD, FD_CLOEXEC)
        child = try ChildProcess(
            MosquittoBroker.subscribeExecutable, arguments,
            stdout: pipe.fileHandleForWriting.fileDescriptor, stderr: pipe.fileHandleForWriting.fileDescriptor)
        try pipe.fileHandleForWriting.close()
        let reader = pipe.fileHandleForReading
        // The reader holds the subscriber weakly: dropping the subscriber kills its child
        // (deinit), which ends the output and this thread.
        Thread.detachNewThread { [weak self] in
            while true {
                let chunk = reader.availableData
                guard !chunk.isEmpty, let self else { break }
                self.lock.withLock { self.received.append(chunk) }
            }
            try? reader.close()
            if let self { self.lock.withLock { self.ended = true } }
        }
    }

    deinit {
        child.signal(SIGKILL)
        child.wait(timeout: 10)
    }

    /// The complete lines so far.
    public var lines: [String] {
        lock.withLock { lines(in: received) }
    }

    private func lines(in received: Data) -> [String] {
        String(decoding: received, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast().map(String.init).filter { !$0.hasPrefix(probeTopic + " ") }
    }

    /// Waits for the probe's line (the broker has the subscription).
    func waitUntilSubscribed() async throws {
        _ = try await waitForLines(timeout: .seconds(10), "the probe") { [probeTopic] _ in
            self.lock.withLock { String(decoding: self.received, as: UTF8.self).contains(probeTopic + " ") }
        }
    }

    /// Waits until `count` lines arrived; throws (with what did arrive) after `timeout`.
    public func waitForLines(_ count: Int, timeout: Duration = .seconds(10)) async throws -> [String] {
        try await waitForLines(timeout: timeout, "\(count) lines") { $0.count >= count }
    }

    /// Waits until a line that satisfies `match` arrived, and returns it.
    public func waitForLine(timeout: Duration = .seconds(10), where match: @escaping (String) -> Bool) async throws -> String {
        try await waitForLines(timeout: timeout, "a matching line") { $0.contains(where: match) }.first(where: match)!
    }

    private func waitForLines(
        timeout: Duration, _ what: String, until done: ([String]) -> Bool
    ) async throws -> [String] {
        var lines: [String] = []
        do {
            try await eventually(what, within: timeout, every: .milliseconds(10)) {
                let ended: Bool
                (lines, ended) = lock.withLock { (self.lines(in: received), self.ended) }
                if done(lines) { return true }
                if ended { throw FixtureError("mosquitto_sub ended") }
                return false
            }
        } catch {
            throw FixtureError("mosquitto_sub gave \(lines) instead of \(what) (exit status \(String(describing: child.status)))")
        }
        return lines
    }
}
