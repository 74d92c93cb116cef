import Testing

@testable import FleetCore

@Suite(.timeLimit(.minutes(1))) struct EventBroadcasterTests {
    typealias Delivery = EventBroadcaster<Int>.Delivery

    func describe(_ d: Delivery) -> String {
        switch d {
        case .event(let n): "\(n)"
        case .dropped(let n): "dropped \(n)"
        }
    }

    @Test func slowConsumerLosesTheOldestAndIsToldHowMany() async {
        let broadcaster = EventBroadcaster<Int>()
        let subscription = broadcaster.subscribe(bufferSize: 2)
        for n in 1...5 { broadcaster.publish(n) }
        var iterator = subscription.makeAsyncIterator()
        var seen: [String] = []
        for _ in 0..<3 { seen.append(describe(await iterator.next()!)) }
        #expect(seen == ["dropped 3", "4", "5"])
        broadcaster.publish(6)
        #expect(await iterator.next().map(describe) == "6")
    }

    @Test func slowAndFastConsumersAtTheSameTime() async throws {
        let broadcaster = EventBroadcaster<Int>()
        let fast = broadcaster.subscribe(bufferSize: 1000)
        let slow = broadcaster.subscribe(bufferSize: 4)
        let fastTask = Task {
            var got: [String] = []
            for await delivery in fast { got.append(describe(delivery)) }
            return got
        }
        // The slow consumer does not read at all while 100 events are published: publishing
        // never waits for it.
        for n in 0..<100 { broadcaster.publish(n) }
        broadcaster.finish()
        var slowGot: [String] = []
        for await delivery in slow { slowGot.append(describe(delivery)) }
        #expect(slowGot == ["dropped 96", "96", "97", "98", "99"])
        #expect(await fastTask.value == (0..<100).map(String.init))
        #expect(broadcaster.subscriberCount == 0)
    }

    @Test func aFilteredSubscriberNeverBuffersWhatItDoesNotWant() async {
        let broadcaster = EventBroadcaster<Int>()
        let even = broadcaster.subscribe(bufferSize: 3) { $0.isMultiple(of: 2) }
        let all = broadcaster.subscribe(bufferSize: 100)
        for n in 1...6 { broadcaster.publish(n) }
        broadcaster.finish()
        var evenGot: [String] = []
        for await delivery in even { evenGot.append(describe(delivery)) }
        // Three odd numbers did not take room in its buffer of three: nothing was dropped.
        #expect(evenGot == ["2", "4", "6"])
        var allGot: [String] = []
        for await delivery in all { allGot.append(describe(delivery)) }
        #expect(allGot == (1...6).map(String.init))
    }

    @Test func stoppingIterationUnsubscribes() async {
        let broadcaster = EventBroadcaster<Int>()
        do {
            let subscription = broadcaster.subscribe()
            #expect(broadcaster.subscriberCount == 1)
            broadcaster.publish(1)
            for await _ in subscription { break }
        }
        #expect(broadcaster.subscriberCount == 0)
        broadcaster.publish(2)  // nobody listening: fine
    }

    @Test func cancellingTheConsumerUnsubscribes() async {
        let broadcaster = EventBroadcaster<Int>()
        let subscription = broadcaster.subscribe()
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let consumer = Task {
            var count = 0
            for await _ in subscription {
                count += 1
                startedContinuation.yield()
            }
            return count
        }
        broadcaster.publish(1)
        var iterator = started.makeAsyncIterator()
        await iterator.next()  // the consumer got event 1 and is waiting for more
        consumer.cancel()
        let watchdog = Watchdog { broadcaster.finish() }
        #expect(await consumer.value == 1)
        #expect(!watchdog.stop(), "cancelling did not end the subscription")
        #expect(broadcaster.subscriberCount == 0)
    }

    @Test func finishEndsSubscriptionsAfterTheirBuffer() async {
        let broadcaster = EventBroadcaster<Int>()
        let subscription = broadcaster.subscribe()
        broadcaster.publish(1)
        broadcaster.finish()
        var got: [String] = []
        for await delivery in subscription { got.append(describe(delivery)) }
        #expect(got == ["1"])
        var late = broadcaster.subscribe().makeAsyncIterator()
        #expect(await late.next() == nil)
    }

    @Test func fleetEventsFlowThrough() async {
        let broadcaster = EventBroadcaster<FleetEvent>(defaultBufferSize: 8)
        let subscription = broadcaster.subscribe()
        let board = BoardAddress("02:00:00:00:00:01")!
        broadcaster.publish(.boardPhaseChanged(board, from: .connecting, to: .ready))
        broadcaster.publish(.temperature(board, Celsius(rawByte: 0xFB)))
        var iterator = subscription.makeAsyncIterator()
        guard case .event(.boardPhaseChanged(board, .connecting, .ready)) = await iterator.next() else {
            Issue.record("expected the phase change first")
            return
        }
        guard case .event(.temperature(board, Celsius(degrees: -5))) = await iterator.next() else {
            Issue.record("expected the temperature")
            return
        }
    }
}
