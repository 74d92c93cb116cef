import FleetCore
import Synchronization
import Testing

@testable import FleetRPCServer

/// What a connection follows (``ConnectionSubscriptions``) and how its values reach a client
/// that reads slowly (``ValueOutbox``): without a bus, with a connection whose frames the test
/// writes out itself.
@Suite struct ConnectionSubscriptionsTests {
    static func connection(id: UInt64 = 1, queueLimit: Int = 1024) -> (RPCConnection, AsyncStream<[UInt8]>) {
        let (frames, sink) = AsyncStream<[UInt8]>.makeStream()
        let connection = RPCConnection(
            id: id, credentials: PeerCredentials(pid: 1, uid: 1000, gid: 1000), queueLimit: queueLimit
        ) { frame in
            sink.yield(frame)
            return true
        }
        return (connection, frames)
    }

    let board = BoardAddress("F0:0D:00:00:00:01")!
    let other = BoardAddress("F0:0D:00:00:00:02")!
    let service = GattUUID("180f")!
    let level = GattUUID("2a19")!

    @Test func askingAgainKeepsTheOneSubscriptionAndTheBoundHolds() throws {
        let subscriptions = ConnectionSubscriptions(limit: 2)
        let (connection, _) = Self.connection()
        let key = ConnectionSubscriptions.Key.board(board, service: service, characteristic: level)
        let first = try subscriptions.claim([key], on: connection)
        #expect(first == .init(new: [key], existing: []))
        let cancelled = Atomic(0)
        #expect(subscriptions.install(key, on: connection) { cancelled.add(1, ordering: .relaxed) })
        // The same characteristic again: the one it has, nothing new subscribed.
        #expect(try subscriptions.claim([key, key], on: connection) == .init(new: [], existing: [key]))
        #expect(subscriptions.count(on: connection) == 1)
        // Two more would pass the bound of two: none is taken.
        let more: [ConnectionSubscriptions.Key] = [.device(other, handle: 12), .device(other, handle: 15)]
        #expect(throws: ConnectionSubscriptions.Refusal(held: 1, asked: 2, limit: 2)) {
            try subscriptions.claim(more, on: connection)
        }
        #expect(subscriptions.count(on: connection) == 1)
        #expect(try subscriptions.claim([more[0]], on: connection).new == [more[0]])
        // Another connection has a bound of its own.
        let (second, _) = Self.connection(id: 2)
        #expect(try subscriptions.claim(more, on: second).new == more)
        // Stopped: the subscription ends, and its place is free.
        #expect(subscriptions.remove(key, on: connection))
        #expect(cancelled.load(ordering: .relaxed) == 1)
        #expect(subscriptions.count(on: connection) == 1)
    }

    @Test func aClosedConnectionEndsEverySubscriptionAndOneSetUpMeanwhile() throws {
        let subscriptions = ConnectionSubscriptions(limit: 8)
        let (connection, _) = Self.connection()
        let keys: [ConnectionSubscriptions.Key] = [.device(board, handle: 12), .device(board, handle: 15)]
        _ = try subscriptions.claim(keys, on: connection)
        let cancelled = Atomic(0)
        #expect(subscriptions.install(keys[0], on: connection) { cancelled.add(1, ordering: .relaxed) })
        connection.markClosed()
        #expect(cancelled.load(ordering: .relaxed) == 1)
        // The second was still being set up: installed now, it is ended at once.
        #expect(!subscriptions.install(keys[1], on: connection) { cancelled.add(1, ordering: .relaxed) })
        #expect(cancelled.load(ordering: .relaxed) == 2)
        #expect(subscriptions.count(on: connection) == 0)
    }

    struct Sent: Equatable {
        var value: Int
        var lost: Int
    }

    @Test func aSlowReaderLosesTheOldestValuesCountedNotItsConnection() async {
        // Room for values while fewer than 2 frames wait for the client.
        let (connection, frames) = Self.connection(queueLimit: 4)
        connection.notify(method: "events.event", params: [1])
        connection.notify(method: "events.event", params: [2])
        let outbox = ValueOutbox<Int>(capacity: 3)
        for value in 1...10 { outbox.put(value) }
        outbox.finish()
        #expect(outbox.droppedCount == 7)
        let sent = Mutex<[Sent]>([])
        let delivery = Task {
            await outbox.deliver(to: connection) { value, lost in
                sent.withLock { $0.append(Sent(value: value, lost: lost)) }
                return connection.notify(method: "device.value", params: [value])
            }
        }
        // The client reads at last: each frame written makes room for the next.
        var written = 0
        for await _ in frames {
            connection.frameWritten()
            written += 1
            if written == 5 { break }
        }
        await delivery.value
        #expect(sent.withLock { $0 } == [Sent(value: 8, lost: 7), Sent(value: 9, lost: 0), Sent(value: 10, lost: 0)])
        #expect(!connection.isClosed)
    }

    @Test func theEndOfInputRunsOnceBeforeTheClose() {
        let (connection, _) = Self.connection()
        let ran = Atomic(0)
        connection.onInputEnd { ran.add(1, ordering: .relaxed) }
        #expect(!connection.inputHasEnded)
        connection.markInputEnded()
        connection.markClosed()
        #expect(ran.load(ordering: .relaxed) == 1)
        #expect(connection.inputHasEnded)
        // Asked after the end: at once.
        connection.onInputEnd { ran.add(1, ordering: .relaxed) }
        #expect(ran.load(ordering: .relaxed) == 2)
    }
}
