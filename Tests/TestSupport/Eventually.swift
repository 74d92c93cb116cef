/// Waits until `condition` holds, checking it again every `interval`, and throws
/// ``EventuallyTimedOut`` (naming `what`, and what `otherwise` says of the state then) once
/// `timeout` has passed. For state that announces no change (another process's files and
/// sockets, the testbed's boards, a count kept on another thread): where an event says
/// what changed, wait for that event instead.
public func eventually(
    _ what: String, within timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(20),
    otherwise describe: @autoclosure () async throws -> String = "", _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while try await !condition() {
        guard clock.now < deadline else {
            let state = (try? await describe()) ?? ""
            throw EventuallyTimedOut(what: what, timeout: timeout, state: state)
        }
        try await clock.sleep(for: interval)
    }
}

/// ``eventually(_:within:every:otherwise:_:)`` ran out of time.
public struct EventuallyTimedOut: Error, CustomStringConvertible {
    public let what: String
    public let timeout: Duration
    /// What the caller said of the state at that moment (may be empty).
    public let state: String

    public var description: String {
        "timed out after \(timeout) waiting until \(what)\(state.isEmpty ? "" : "; \(state)")"
    }
}
