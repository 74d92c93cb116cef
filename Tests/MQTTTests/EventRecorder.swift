import Foundation
import MQTT
import TestSupport

/// Consumes a client's events in the background and lets a test wait, with a deadline,
/// for the next event that matches.
final class EventRecorder: @unchecked Sendable {
    // Safe: `events`, `cursor` and `ended` are only touched under `lock`.
    private let lock = NSLock()
    private var events: [MQTTEvent] = []
    private var cursor = 0
    private var ended = false
    private var task: Task<Void, Never>?

    init(_ client: MQTTClient) {
        let stream = client.events
        task = Task { [weak self] in
            for await event in stream { self?.append(event) }
            self?.end()
        }
    }

    deinit { task?.cancel() }

    private func append(_ event: MQTTEvent) { lock.withLock { events.append(event) } }
    private func end() { lock.withLock { ended = true } }

    /// Every event so far.
    var all: [MQTTEvent] { lock.withLock { events } }
    var hasEnded: Bool { lock.withLock { ended } }

    /// The next event after the last one returned that satisfies `predicate`; the events
    /// skipped on the way are returned too. Throws after `timeout`.
    @discardableResult
    func next(
        _ what: String, timeout: Duration = .seconds(10), where predicate: (MQTTEvent) -> Bool
    ) async throws -> (event: MQTTEvent, skipped: [MQTTEvent]) {
        let deadline = ContinuousClock.now + timeout
        while true {
            let found: (MQTTEvent, [MQTTEvent])? = lock.withLock {
                guard let index = events[cursor...].firstIndex(where: predicate) else { return nil }
                defer { cursor = index + 1 }
                return (events[index], Array(events[cursor..<index]))
            }
            if let found { return found }
            if ContinuousClock.now >= deadline || hasEnded {
                throw RecorderError("no \(what) within \(timeout); events: \(all)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits until the stream finished; throws after `timeout`.
    func waitForEnd(timeout: Duration = .seconds(10)) async throws {
        do {
            try await eventually("the event stream ends", within: timeout, every: .milliseconds(5)) { hasEnded }
        } catch {
            throw RecorderError("the event stream did not end within \(timeout)")
        }
    }

    func connected(timeout: Duration = .seconds(10)) async throws {
        try await next(".connected", timeout: timeout) { $0 == .connected }
    }

    func published(_ id: Int32, timeout: Duration = .seconds(10)) async throws {
        try await next(".published(\(id))", timeout: timeout) { $0 == .published(messageID: id) }
    }

    func message(on topic: String, timeout: Duration = .seconds(10)) async throws -> MQTTMessage {
        let (event, _) = try await next("message on \(topic)", timeout: timeout) {
            if case .message(let m) = $0 { m.topic == topic } else { false }
        }
        guard case .message(let message) = event else { fatalError("unreachable") }
        return message
    }
}

struct RecorderError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
