import Synchronization

/// The values of one subscription on their way to its connection. The connection's queue is
/// shared with replies and other notifications, and a client that lets it fill is
/// disconnected; so values are sent only while it has room (``RPCConnection/waitForRoom()``).
/// Meanwhile at most `capacity` wait here; past that the oldest is dropped and counted, and
/// the next value sent says how many were lost before it. A slow reader loses values, not
/// its connection or its lease.
final class ValueOutbox<Value: Sendable>: Sendable {
    private let stream: AsyncStream<Value>
    private let continuation: AsyncStream<Value>.Continuation
    private let lost = Atomic<Int>(0)
    /// Values dropped since the subscription began.
    private let lostInAll = Atomic<Int>(0)

    /// Values that may wait for the connection, per subscription.
    static var defaultCapacity: Int { 64 }

    init(capacity: Int = defaultCapacity) {
        (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(max(1, capacity)))
    }

    /// A new value: it waits its turn; the oldest waiting is dropped (and counted) when full.
    func put(_ value: Value) {
        if case .dropped = continuation.yield(value) {
            lost.add(1, ordering: .relaxed)
            lostInAll.add(1, ordering: .relaxed)
        }
    }

    /// No more values will come.
    func finish() { continuation.finish() }

    /// Values dropped so far.
    var droppedCount: Int { lostInAll.load(ordering: .relaxed) }

    /// Sends each value with how many were lost just before it, once `connection` has room,
    /// until `send` refuses (the connection is gone), the values end or the task is cancelled.
    func deliver(to connection: RPCConnection, _ send: (Value, _ lost: Int) -> Bool) async {
        for await value in stream {
            await connection.waitForRoom()
            guard !Task.isCancelled, !connection.isClosed else { return }
            guard send(value, lost.exchange(0, ordering: .relaxed)) else { return }
        }
    }
}
