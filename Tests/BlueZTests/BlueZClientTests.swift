import BlueZ
import DBus
import TestSupport
import Testing

/// End to end on the testbed, on both lanes: real libdbus, a real dbus-daemon, and BlueZoo
/// with fidelity fixes or real bluetoothd in a VM. Serialized: each test runs its own
/// testbed, and 2 cores are shared.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct BlueZClientTests {
    @Test(arguments: Lane.enabled)
    func discoversEveryBoardWithTheLEDServiceFilter(lane: Lane) async throws {
        try await BlueZFixture.with(lane: lane, boards: 5) { fixture in
            let devices = try await fixture.discoverBoards(count: 5)
            let expected = try await fixture.testbed.state()
            #expect(Set(devices.map(\.address)) == Set(expected.map { $0.address.uppercased() }))
            #expect(devices.allSatisfy { $0.adapterPath == fixture.central.path })
            #expect(Set(devices.compactMap(\.name)) == Set(expected.map(\.name)))
        }
    }

    @Test(arguments: Lane.enabled)
    func connectsWritesLEDAndReadsTemperatures(lane: Lane) async throws {
        try await BlueZFixture.with(lane: lane, boards: 5) { fixture in
            let client = fixture.client
            try await fixture.testbed.run(["board", "temp", "nano-02", "-5"])
            let devices = try await fixture.discoverBoards(count: 5)
            // One connect at a time per adapter (parallel connects are fragile on real
            // controllers), then the writes to all boards at once.
            for device in devices {
                try await client.connect(device)
                let resolved = try #require(await client.device(at: device.path))
                #expect(resolved.hasLink && resolved.servicesResolved)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for device in devices {
                    group.addTask {
                        let led = try await client.characteristic(
                            device: device, service: Nano.ledService, characteristic: Nano.ledStatus)
                        try await client.writeValue([0x01], to: led)
                    }
                }
                try await group.waitForAll()
            }
            let state = try await fixture.testbed.state()
            #expect(state.allSatisfy { $0.led == 1 && $0.ledWrites == 1 })
            for device in devices {
                let board = try #require(state.first { $0.address.uppercased() == device.address })
                let temperature = try await client.characteristic(
                    device: device, service: Nano.sensorService, characteristic: Nano.temperature)
                let bytes = try await client.readValue(temperature)
                #expect(bytes.count == 1)
                #expect(Int(Int8(bitPattern: bytes[0])) == board.temperature)
            }
            #expect(state.contains { $0.name == "nano-02" && $0.temperature == -5 })
        }
    }

    @Test(arguments: Lane.enabled)
    func connectIsIdempotentAndDisconnectReconnectWorks(lane: Lane) async throws {
        try await BlueZFixture.with(lane: lane, boards: 1) { fixture in
            let client = fixture.client
            let device = try #require(try await fixture.discoverBoards(count: 1).first)
            try await client.connect(device)
            try await client.connect(device)  // already connected and resolved: returns at once
            try await client.disconnect(device)
            #expect(await client.device(at: device.path)?.hasLink == false)
            try await client.connect(device)
            let led = try await client.characteristic(device: device, service: Nano.ledService, characteristic: Nano.ledStatus)
            try await client.writeValue([0x00], to: led)
            #expect(try await fixture.testbed.state().first?.led == 0)
        }
    }

    @Test(arguments: Lane.enabled)
    func temperatureNotificationsArriveAsAStream(lane: Lane) async throws {
        try await BlueZFixture.with(lane: lane, boards: 1, extraArguments: ["--notify-interval", "0.2"]) { fixture in
            let client = fixture.client
            let device = try #require(try await fixture.discoverBoards(count: 1).first)
            try await client.connect(device)
            try await fixture.testbed.run(["board", "temp", "nano-01", "-12"])
            let temperature = try await client.characteristic(
                device: device, service: Nano.sensorService, characteristic: Nano.temperature)
            let stream = try await client.notifications(temperature)
            var values: [Int8] = []
            for try await value in stream {
                values.append(Int8(bitPattern: value.first ?? 0))
                if values.count == 3 { break }
            }
            #expect(values == [-12, -12, -12])
            #expect(try await fixture.testbed.state().first?.notifying == true)
        }
    }

    @Test(arguments: Lane.enabled)
    func notificationSessionDeliversValuesEndsOnDropAndStopsOnCancel(lane: Lane) async throws {
        try await BlueZFixture.with(lane: lane, boards: 2, extraArguments: ["--notify-interval", "0.2"]) { fixture in
            let client = fixture.client
            let devices = try await fixture.discoverBoards(count: 2)
            for device in devices { try await client.connect(device) }
            let states = try await fixture.testbed.state()
            try await fixture.testbed.run(["board", "temp", "nano-01", "-7"])
            try await fixture.testbed.run(["board", "temp", "nano-02", "30"])
            var sessions: [String: BlueZNotificationSession] = [:]
            let (values, valueSink) = AsyncStream.makeStream(of: (String, Int8).self)
            let (ends, endSink) = AsyncStream.makeStream(of: (String, BlueZError).self)
            for state in states {
                let device = try #require(devices.first { $0.address == state.address.uppercased() })
                let temperature = try await client.characteristic(
                    device: device, service: Nano.sensorService, characteristic: Nano.temperature)
                let name = state.name
                sessions[name] = try await client.notifications(
                    temperature,
                    onValue: { valueSink.yield((name, Int8(bitPattern: $0.first ?? 0))) },
                    onEnd: { endSink.yield((name, $0)) })
            }
            // Values of each board reach its own handler.
            var seen: [String: Set<Int8>] = [:]
            for await (name, value) in values {
                seen[name, default: []].insert(value)
                if seen["nano-01"] != nil, seen["nano-02"] != nil, seen.values.reduce(0, { $0 + $1.count }) >= 2 { break }
            }
            #expect(seen == ["nano-01": [-7], "nano-02": [30]])
            // A dropped board ends its session (its link went: notConnected), exactly once.
            try await fixture.testbed.run(["board", "drop", "nano-01"])
            var endIterator = ends.makeAsyncIterator()
            let (endedName, error) = try #require(await endIterator.next())
            #expect(endedName == "nano-01")
            guard case .notConnected = error else {
                Issue.record("expected notConnected, got \(error)")
                return
            }
            // Cancelling the other session sends StopNotify: the board stops notifying.
            sessions["nano-02"]?.cancel()
            try? await eventually("nano-02 stops notifying", within: .seconds(5), every: .milliseconds(50)) {
                try await fixture.testbed.state().first(where: { $0.name == "nano-02" })?.notifying == false
            }
            #expect(try await fixture.testbed.state().first { $0.name == "nano-02" }?.notifying == false)
            valueSink.finish()
            endSink.finish()
            #expect(await endIterator.next() == nil, "a session ended more than once")
        }
    }

    @Test(arguments: Lane.enabled)
    func droppedBoardIsSeenAsDisconnectedWithinTwoSeconds(lane: Lane) async throws {
        try await BlueZFixture.with(lane: lane, boards: 2) { fixture in
            let client = fixture.client
            let devices = try await fixture.discoverBoards(count: 2)
            for device in devices { try await client.connect(device) }
            let dropped = try #require(try await fixture.testbed.state().first { $0.name == "nano-01" })
            let path = try #require(devices.first { $0.address == dropped.address.uppercased() }?.path)
            // Counted from the testbed's answer (the drop is done by then): the testbed's own
            // start-up, a process of its own, is no part of what BlueZ takes to tell it.
            try await fixture.testbed.run(["board", "drop", "nano-01"])
            let answered = ContinuousClock.now
            try await client.mirror.wait(timeout: lane.allowing(.seconds(2)), description: "the drop seen within 2 s") {
                ($0.tree.device(at: path)?.hasLink ?? false) ? .pending : .done(())
            }
            #expect(ContinuousClock.now - answered < lane.allowing(.seconds(2)))
            // The other board stays connected and usable.
            let other = try #require(devices.first { $0.path != path })
            #expect(await client.device(at: other.path)?.connected == true)
            // Connecting to the absent board fails instead of hanging or "succeeding".
            await #expect(throws: BlueZError.self) {
                try await client.connect(try #require(await client.device(at: path)), timeout: .seconds(5))
            }
        }
    }

    @Test(arguments: Lane.enabled)
    func mirrorResyncsAfterBlueZRestart(lane: Lane) async throws {
        try await BlueZFixture.with(lane: lane, boards: 3) { fixture in
            let client = fixture.client
            _ = try await fixture.discoverBoards(count: 3)
            let events = await client.mirror.events()
            try await fixture.testbed.run(["bluez", "restart"])
            var sawLost = false
            for await event in events {
                if case .serviceLost = event { sawLost = true }
                if case .serviceLoaded = event, sawLost { break }
            }
            #expect(sawLost)
            #expect(await client.mirror.isLoaded)
            // The mirror equals what BlueZ reports now.
            let reply = try await #require(client.bus as? DBusBlueZBus).connection.call(
                destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                member: "GetManagedObjects")
            let fresh = try #require(reply.first?.dictionary)
            #expect(Set(await client.mirror.tree.objects.keys) == Set(fresh.keys))
            // Boards are discoverable again on the new BlueZ.
            let central = try #require(await client.adapter("hci0"))
            let again = try await BlueZFixture(testbed: fixture.testbed, client: client, central: central)
                .discoverBoards(count: 3)
            #expect(again.count == 3)
        }
    }

    @Test(arguments: Lane.enabled)
    func hundredCallsInFlightAllComplete(lane: Lane) async throws {
        try await BlueZFixture.with(lane: lane, boards: 5) { fixture in
            let client = fixture.client
            let devices = try await fixture.discoverBoards(count: 5)
            for device in devices { try await client.connect(device) }
            var characteristics: [BlueZCharacteristic] = []
            for device in devices {
                characteristics.append(try await client.characteristic(
                    device: device, service: Nano.sensorService, characteristic: Nano.temperature))
            }
            let expected = Dictionary(uniqueKeysWithValues: try await fixture.testbed.state().map {
                ($0.address.uppercased(), $0.temperature)
            })
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<100 {
                    let characteristic = characteristics[index % characteristics.count]
                    let address = devices[index % devices.count].address
                    group.addTask {
                        let bytes = try await client.readValue(characteristic)
                        return Int(Int8(bitPattern: bytes[0])) == expected[address]
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.count == 100)
            #expect(results.allSatisfy { $0 })
        }
    }
}
