import DBus
import Foundation
import Testing
import TestSupport

/// Every signature BlueZ uses, for round trips through a real bus.
let roundTripValues: [DBusValue] = [
    .byte(0xFF), .boolean(true), .boolean(false), .int16(.min), .uint16(.max), .int32(.min), .uint32(.max),
    .int64(.min), .uint64(.max), .double(-1.5e300), .string(""), .string("héllo ✓ 🚀"),
    .objectPath("/"), .objectPath("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF"), .signature("a{oa{sa{sv}}}"),
    .bytes([]), .bytes([0, 1, 2, 255]),
    .array(elementSignature: "s", []), .array(elementSignature: "o", [.objectPath("/a"), .objectPath("/b")]),
    .array(elementSignature: "(ss)", [.structure([.string("a"), .string("b")])]),
    .array(elementSignature: "ay", [.bytes([1]), .bytes([])]),
    .array(elementSignature: "v", [.variant(.int32(1)), .variant(.string("x"))]),
    .structure([.int16(-1), .string("s"), .variant(.boolean(true)), .bytes([9])]),
    .variant(.uint64(42)), .variant(.variant(.variant(.string("deep")))),
    .variant(.array(elementSignature: "s", [.string("x")])),
    .dictionary(keySignature: "s", valueSignature: "v", []),
    .stringVariantDictionary([
        "Address": .string("AA:BB:CC:DD:EE:FF"), "RSSI": .int16(-60), "Connected": .boolean(true),
        "UUIDs": .array(elementSignature: "s", [.string("19b10000-e8f2-537e-4f6c-d104768a1214")]),
        "ManufacturerData": .dictionary(keySignature: "q", valueSignature: "v", [
            DBusDictEntry(key: .uint16(0x004C), value: .variant(.bytes([1, 2, 3]))),
        ]),
        "Value": .bytes([0x01]), "Nested": .variant(.variant(.double(0.5))),
    ]),
    .dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", [
        DBusDictEntry(key: .objectPath("/org/bluez/hci0"), value: .dictionary(keySignature: "s", valueSignature: "a{sv}", [
            DBusDictEntry(key: .string("org.bluez.Adapter1"), value: .stringVariantDictionary(["Powered": .boolean(true)])),
            DBusDictEntry(key: .string("org.freedesktop.DBus.Introspectable"), value: .stringVariantDictionary([:])),
        ])),
        DBusDictEntry(key: .objectPath("/org/bluez/hci0/dev_1"), value: .dictionary(keySignature: "s", valueSignature: "a{sv}", [])),
    ]),
]

@Suite(.timeLimit(.minutes(1)))
struct DBusConnectionTests {
    @Test func connectsAndKnowsItsName() async throws {
        try await BusFixture.with { bus in
            #expect(bus.client.uniqueName.hasPrefix(":"))
            #expect(bus.client.uniqueName != bus.service.uniqueName)
            #expect(bus.client.isConnected)
            let reply = try await bus.client.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus", member: "GetId")
            #expect(reply.first?.string?.count == 32)
        }
    }

    @Test(arguments: roundTripValues)
    func valueRoundTripsThroughMethodCall(_ value: DBusValue) async throws {
        try await BusFixture.with { bus in
            let reply = try await bus.echo([value, .string("after")])
            #expect(reply == [value, .string("after")])
        }
    }

    @Test func everyValueRoundTripsInOneSignal() async throws {
        try await BusFixture.with { bus in
            let rule = DBusMatchRule(sender: bus.service.uniqueName, path: "/sig", interface: "com.example.Sig", member: "All")
            let stream = try await bus.client.signals(matching: rule)
            try bus.service.emitSignal(path: "/sig", interface: "com.example.Sig", member: "All", arguments: roundTripValues)
            let signal = try await within(10, "signal delivery") {
                var iterator = stream.makeAsyncIterator()
                return try await iterator.next()
            }
            #expect(signal?.arguments == roundTripValues)
            #expect(signal?.sender == bus.service.uniqueName)
            #expect(signal?.path == "/sig")
            #expect(signal?.member == "All")
        }
    }

    @Test func largeByteArrayRoundTrips() async throws {
        try await BusFixture.with { bus in
            let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let reply = try await bus.echo([.bytes(big)])
            #expect(reply.first?.bytes == big)
        }
    }

    @Test func badInputIsRejectedNotAborted() async throws {
        try await BusFixture.with { bus in
            let cases: [[DBusValue]] = [
                [.objectPath("no/slash")], [.string("a\0b")], [.signature("a{")],
                [.array(elementSignature: "i", [.string("x")])],
            ]
            for arguments in cases {
                let error = await dbusError { _ = try await bus.echo(arguments) }
                #expect(error?.name == DBusError.Name.invalidArgs, "\(arguments)")
            }
            let badPath = await dbusError {
                _ = try await bus.client.call(destination: bus.service.uniqueName, path: "bad", interface: "a.b", member: "M")
            }
            #expect(badPath?.name == DBusError.Name.invalidArgs)
            #expect(badPath?.message.contains("\"bad\"") == true)
            let badMember = await dbusError {
                _ = try await bus.client.call(destination: bus.service.uniqueName, path: "/", interface: "a.b", member: "1x")
            }
            #expect(badMember?.name == DBusError.Name.invalidArgs)
            #expect(throws: DBusError.self) {
                try bus.client.emitSignal(path: "/a/", interface: "a.b", member: "M", arguments: [])
            }
            // The connection is still fine afterwards.
            let again = try await bus.echo([.int32(5)])
            #expect(again == [.int32(5)])
        }
    }

    @Test func remoteErrorsCarryNameAndMessage() async throws {
        try await BusFixture.with { bus in
            let error = await dbusError { _ = try await bus.invoke("Fail", []) }
            #expect(error == DBusError(name: "com.example.Error.Custom", message: "It failed on purpose."))
            let unknown = await dbusError {
                _ = try await bus.client.call(
                    destination: bus.service.uniqueName, path: "/nothing", interface: "a.b", member: "M")
            }
            #expect(unknown?.name == DBusError.Name.unknownMethod)
            let noService = await dbusError {
                _ = try await bus.client.call(destination: "com.example.Nobody", path: "/", interface: "a.b", member: "M")
            }
            #expect(noService?.name == DBusError.Name.serviceUnknown)
        }
    }

    @Test func callsTimeOut() async throws {
        try await BusFixture.with { bus in
            let start = ContinuousClock.now
            let error = await dbusError { _ = try await bus.invoke("Hang", [], timeout: .milliseconds(300)) }
            let elapsed = ContinuousClock.now - start
            #expect(error?.isTimeout == true, "\(String(describing: error))")
            #expect(elapsed >= .milliseconds(250))
            #expect(elapsed < .seconds(5))
        }
    }

    @Test func hundredCallsInFlightAtOnce() async throws {
        try await BusFixture.with { bus in
            // Barrier(100) only answers once all 100 calls wait in the service together,
            // so this completes only if the engine really keeps them in flight at once.
            let results = try await withThrowingTaskGroup(of: UInt32.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await bus.invoke("Barrier", [.uint32(100)]).first?.uint32 ?? 0 }
                }
                return try await group.reduce(into: [UInt32]()) { $0.append($1) }
            }
            #expect(results.count == 100)
            #expect(results.allSatisfy { $0 >= 100 })
            let echoes = try await withThrowingTaskGroup(of: (Int32, [DBusValue]).self) { group in
                for i in Int32(0)..<100 {
                    group.addTask { (i, try await bus.echo([.int32(i)])) }
                }
                return try await group.reduce(into: [(Int32, [DBusValue])]()) { $0.append($1) }
            }
            #expect(echoes.count == 100)
            #expect(echoes.allSatisfy { $0.1 == [.int32($0.0)] })
        }
    }

    @Test func cancellingTheCallerCancelsTheCall() async throws {
        try await BusFixture.with { bus in
            var arrivals = bus.hangs.makeAsyncIterator()
            let task = Task { try await bus.invoke("Hang", [], timeout: .seconds(60)) }
            _ = await arrivals.next()  // the call is in flight: the service has it
            task.cancel()
            let outcome = try await within(5, "cancelled call") { await task.result }
            #expect(throws: CancellationError.self) { try outcome.get() }
            #expect(try await bus.echo([.byte(1)]) == [.byte(1)])
        }
    }

    @Test func signalsAreDeliveredAndTheMatchIsRemovedWhenTheConsumerStops() async throws {
        try await BusFixture.with { bus in
            let rule = DBusMatchRule(path: "/sig", interface: "com.example.Sig", member: "Tick")
            do {
                let stream = try await bus.client.signals(matching: rule)
                for i in UInt32(0)..<3 {
                    try bus.service.emitSignal(path: "/sig", interface: "com.example.Sig", member: "Tick", arguments: [.uint32(i)])
                }
                let received = try await within(10, "three signals") {
                    var seen: [UInt32] = []
                    for try await signal in stream {
                        seen.append(signal.arguments.first?.uint32 ?? 99)
                        if seen.count == 3 { break }
                    }
                    return seen
                }
                #expect(received == [0, 1, 2])
            }
            // The stream is gone: its RemoveMatch was queued before this call, so the bus
            // no longer has the rule.
            let error = await dbusError {
                _ = try await bus.client.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus", member: "RemoveMatch", arguments: [.string(rule.ruleString)])
            }
            #expect(error?.name == DBusError.Name.matchRuleNotFound)
        }
    }

    @Test func cancellingTheConsumerRemovesTheMatch() async throws {
        try await BusFixture.with { bus in
            let rule = DBusMatchRule(interface: "com.example.Sig", member: "Never")
            let stream = try await bus.client.signals(matching: rule)
            let (started, start) = AsyncStream.makeStream(of: Void.self)
            let consumer = Task {
                start.yield()
                for try await _ in stream {}
            }
            var starts = started.makeAsyncIterator()
            _ = await starts.next()  // the consumer is running
            consumer.cancel()
            _ = try await within(5, "consumer end") { await consumer.result }
            let error = await dbusError {
                _ = try await bus.client.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus", member: "RemoveMatch", arguments: [.string(rule.ruleString)])
            }
            #expect(error?.name == DBusError.Name.matchRuleNotFound)
        }
    }

    @Test func aWellKnownSenderFiltersOtherSenders() async throws {
        try await BusFixture.with { bus in
            let other = try await DBusConnection.connect(to: .address(bus.bus.address))
            defer { other.close() }
            try await bus.service.requestName("com.example.Emitter")
            let all = try await bus.client.signals(matching: DBusMatchRule(interface: "com.example.Sig"))
            let filtered = try await bus.client.signals(
                matching: DBusMatchRule(sender: "com.example.Emitter", interface: "com.example.Sig"))
            try other.emitSignal(path: "/x", interface: "com.example.Sig", member: "From", arguments: [.string("other")])
            let first = try await within(10, "other's signal") {
                var iterator = all.makeAsyncIterator()
                return try await iterator.next()
            }
            #expect(first?.arguments == [.string("other")])
            try bus.service.emitSignal(path: "/x", interface: "com.example.Sig", member: "From", arguments: [.string("emitter")])
            let got = try await within(10, "emitter's signal") {
                var iterator = filtered.makeAsyncIterator()
                return try await iterator.next()
            }
            #expect(got?.arguments == [.string("emitter")])
            #expect(got?.sender == bus.service.uniqueName)
        }
    }

    @Test func nameOwnerChangesAreSeen() async throws {
        try await BusFixture.with { bus in
            let name = "com.example.Watched"
            #expect(try await bus.client.nameOwner(of: name) == nil)
            let changes = try await bus.client.nameOwnerChanges(of: name)
            #expect(try await bus.service.requestName(name) == 1)
            #expect(try await bus.client.nameOwner(of: name) == bus.service.uniqueName)
            #expect(try await bus.service.releaseName(name) == 1)
            let seen = try await within(10, "two owner changes") {
                var result: [DBusNameOwnerChange] = []
                for try await change in changes {
                    result.append(change)
                    if result.count == 2 { break }
                }
                return result
            }
            #expect(seen == [
                DBusNameOwnerChange(name: name, oldOwner: nil, newOwner: bus.service.uniqueName),
                DBusNameOwnerChange(name: name, oldOwner: bus.service.uniqueName, newOwner: nil),
            ])
            #expect(try await bus.client.nameOwner(of: name) == nil)
        }
    }

    @Test func aSlowConsumerGetsAnErrorNotSilentLoss() async throws {
        try await BusFixture.with { bus in
            let stream = try await bus.client.signals(
                matching: DBusMatchRule(interface: "com.example.Sig", member: "Flood"), bufferLimit: 2)
            for i in UInt32(0)..<10 {
                try bus.service.emitSignal(path: "/f", interface: "com.example.Sig", member: "Flood", arguments: [.uint32(i)])
            }
            // The service's signals precede this reply on the bus, so all ten were handled.
            _ = try await bus.echo([])
            var iterator = stream.makeAsyncIterator()
            #expect(try await iterator.next()?.arguments == [.uint32(0)])
            #expect(try await iterator.next()?.arguments == [.uint32(1)])
            let error = await dbusError { _ = try await iterator.next() }
            #expect(error?.name == "org.freedesktop.DBus.Error.LimitsExceeded")
        }
    }

    @Test func losingTheBusFailsPendingCallsAndStreams() async throws {
        try await BusFixture.with { bus in
            let stream = try await bus.client.signals(matching: DBusMatchRule(interface: "com.example.Sig"))
            let call = Task { try await bus.invoke("Hang", [], timeout: .seconds(60)) }
            let consumer = Task { for try await _ in stream {} }
            // Make sure the call reached the service before the bus dies.
            _ = try await bus.echo([])
            bus.bus.stop()
            let callResult = try await within(5, "pending call after bus loss") { await call.result }
            let streamResult = try await within(5, "stream after bus loss") { await consumer.result }
            #expect(throws: DBusError.self) { try callResult.get() }
            if case .failure(let error as DBusError) = callResult { #expect(error.isDisconnected) }
            if case .failure(let error as DBusError) = streamResult {
                #expect(error.isDisconnected)
            } else {
                Issue.record("the stream ended without a Disconnected error: \(streamResult)")
            }
            #expect(!bus.client.isConnected)
            let later = await dbusError { _ = try await bus.echo([]) }
            #expect(later?.isDisconnected == true)
            #expect(throws: DBusError.self) {
                try bus.client.emitSignal(path: "/a", interface: "a.b", member: "M", arguments: [])
            }
        }
    }

    @Test func closingFailsPendingCalls() async throws {
        try await BusFixture.with { bus in
            let call = Task { try await bus.invoke("Hang", [], timeout: .seconds(60)) }
            _ = try await bus.echo([])
            bus.client.close()
            #expect(!bus.client.isConnected)
            let result = try await within(5, "call after close") { await call.result }
            if case .failure(let error as DBusError) = result {
                #expect(error.isDisconnected)
            } else {
                Issue.record("expected Disconnected, got \(result)")
            }
        }
    }

    @Test func connectingToNothingFailsClearly() async throws {
        let error = await dbusError {
            _ = try await DBusConnection.connect(to: .address("unix:path=/nonexistent/bus-socket"))
        }
        #expect(error != nil)
        #expect(error?.message.contains("/nonexistent/bus-socket") == true)
    }
}
