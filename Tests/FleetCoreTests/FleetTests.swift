import FleetCore
import Foundation
import Logging
import TestSupport
import Testing

/// End to end on the testbed, on both lanes: Fleet → BlueZ → DBus → dbus-daemon → BlueZoo
/// (fixed) or real bluetoothd in a VM → boards. Serialized: each test runs its own testbed,
/// and 2 cores are shared.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct FleetTests {
    @Test(arguments: Lane.enabled)
    func twentyBoardsSwitchOnInOneCall(lane: Lane) async throws {
        // A controller that holds 20 links (the testbed's does); the default limit is 7.
        try await FleetFixture.with(
            lane: lane, boards: 20, configuration: { FleetConfiguration(connectionLimit: 20, stateDirectory: $0) }
        ) { fixture in
            try await fixture.waitUntilReady(20, timeout: .seconds(40))
            let result = await fixture.fleet.setLED(.all, on: true, timeout: .seconds(5))
            #expect(result.outcomes.count == 20)
            #expect(result.allSucceeded, "failures: \(result.outcomes.compactMap(\.error))")
            let state = try await fixture.testbed.state()
            #expect(state.count == 20)
            #expect(state.allSatisfy { $0.led == 1 }, "\(state.filter { $0.led != 1 }.map(\.name))")
        }
    }

    @Test(arguments: Lane.enabled)
    func temperaturesComeFromTheBoardsIncludingBelowZero(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 3) { fixture in
            try await fixture.testbed.run(["board", "temp", "nano-02", "-5"])
            try await fixture.testbed.run(["board", "temp", "nano-03", "31"])
            try await fixture.waitUntilReady(3)
            let result = await fixture.fleet.readTemperature(.all, maxAge: .zero, timeout: .seconds(5))
            #expect(result.allSucceeded)
            let state = try await fixture.testbed.state()
            for outcome in result.outcomes {
                let board = try #require(state.first { $0.address.uppercased() == outcome.address.rawValue })
                #expect(outcome.value?.value.degrees == board.temperature)
            }
            #expect(result.outcomes.contains { $0.value?.value.degrees == -5 })
        }
    }

    /// The status lists each linked board under the adapter it is linked through, the one
    /// its view shows (what each adapter's ledger holds, asked: no second record of it).
    @Test(arguments: Lane.enabled)
    func theStatusListsEachLinkedBoardUnderItsAdapter(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 3) { fixture in
            try await fixture.waitUntilReady(3)
            let status = fixture.fleet.status
            let listed = status.adapters.flatMap { adapter in adapter.boards.map { (board: $0, adapter: adapter.name) } }
            #expect(listed.count == 3, "\(status.adapters)")
            for board in await fixture.fleet.snapshots() {
                #expect(listed.contains { $0.board == board.address && $0.adapter == board.adapter }, "\(board.address) via \(board.adapter ?? "-"): \(listed)")
            }
            #expect(status.readyCount == 3 && status.connectedCount == 3)
        }
    }

    @Test(arguments: Lane.enabled)
    func notifiedTemperaturesKeepTheCacheCurrentWithoutReads(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 3, testbedArguments: ["--notify-interval", "0.2", "--latency-ms", "400"]) {
            fixture in
            try await fixture.waitUntilReady(3, timeout: .seconds(30))
            let fleet = fixture.fleet
            try await fixture.testbed.run(["board", "temp", "nano-02", "-9"])
            // Notified temperatures are recorded as they arrive; no read is needed.
            var after: [BoardSnapshot] = []
            try? await eventually("nano-02 at -9 °C, every reading fresh", within: lane.allowing(.seconds(10)), every: .milliseconds(200)) {
                after = await fleet.snapshots()
                return after.contains { $0.name == "nano-02" && $0.temperature?.celsius.degrees == -9 }
                    && after.allSatisfy { ($0.temperature?.age(at: .now) ?? .seconds(99)) < .seconds(2) }
            }
            #expect(after.first { $0.name == "nano-02" }?.temperature?.celsius.degrees == -9)
            for board in after {
                #expect(board.phase == .ready)
                #expect((board.temperature?.age(at: .now) ?? .seconds(99)) < .seconds(2), "\(board.address): stale temperature")
            }
            // The cached value answers a read without the radio (a radio read takes at least
            // the testbed's 400 ms latency).
            let cached = await fleet.readTemperature(.all, maxAge: .seconds(5), timeout: .seconds(5))
            #expect(cached.allSucceeded)
            #expect(cached.outcomes.allSatisfy { $0.latency < .milliseconds(300) }, "\(cached.outcomes.map(\.latency))")
        }
    }

    /// BlueZoo lane only: `--advertise-while-connected` models peripherals that go on
    /// advertising when connected; real controllers (and the Nano) stop.
    @Test func connectedBoardsThatKeepAdvertisingKeepTheirRSSICurrent() async throws {
        try await FleetFixture.with(boards: 3, testbedArguments: ["--advertise-while-connected"]) { fixture in
            try await fixture.waitUntilReady(3, timeout: .seconds(30))
            let fleet = fixture.fleet
            let before = Dictionary(uniqueKeysWithValues: await fleet.snapshots().map { ($0.address, $0) })
            // Advertisements (about one a second) are recorded as they arrive.
            var after: [BoardAddress: BoardSnapshot] = [:]
            try? await eventually("every board seen again, with an RSSI", every: .milliseconds(200)) {
                after = Dictionary(uniqueKeysWithValues: await fleet.snapshots().map { ($0.address, $0) })
                return after.allSatisfy { address, board in
                    (board.lastSeen ?? .now) > (before[address]?.lastSeen ?? .now) && board.rssi != nil
                }
            }
            for (address, board) in after {
                #expect(board.phase == .ready)
                #expect(board.rssi != nil, "\(address) has no RSSI")
                #expect((board.lastSeen ?? .now) > (before[address]?.lastSeen ?? .now), "\(address): last seen did not advance")
            }
        }
    }

    @Test(arguments: Lane.enabled)
    func droppedBoardsFailAloneWithinTheDeadlineAndRejoinWithTheirLED(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 5, testbedArguments: ["--latency-ms", "150"]) { fixture in
            try await fixture.waitUntilReady(5)
            let fleet = fixture.fleet
            let started = ContinuousClock.now
            let fanOut = Task { await fleet.setLED(.all, on: true, timeout: .seconds(3)) }
            try await fixture.testbed.run(["board", "drop", "nano-02"])
            try await fixture.testbed.run(["board", "drop", "nano-04"])
            let result = await fanOut.value
            let elapsed = ContinuousClock.now - started
            #expect(elapsed < .seconds(4), "the fan-out took \(elapsed), past its 3 s deadline")
            let failed = result.outcomes.filter { !$0.succeeded }
            #expect(Set(failed.compactMap(\.name)).isSubset(of: ["nano-02", "nano-04"]))
            for outcome in failed {
                #expect([.absent, .timeout, .notConnected].contains(outcome.error?.code), "\(String(describing: outcome.error))")
            }
            #expect(result.succeededCount >= 3)
            // Whatever reached the dropped boards, they come back and get the LED on by themselves.
            try await fixture.testbed.run(["board", "restore", "nano-02"])
            try await fixture.testbed.run(["board", "restore", "nano-04"])
            let state = try await fixture.waitForTestbed(timeout: .seconds(30), "LEDs re-applied after restore") {
                $0.allSatisfy { $0.led == 1 }
            }
            #expect(state.allSatisfy { $0.present })
        }
    }

    /// The board holds its answer for 1.5 s, so the write is surely in flight when it loses
    /// power. Real BlueZ ends that write with ATT error 0x0e (not "Not connected"): the user
    /// must read that the board went, not a GATT protocol error.
    @Test(arguments: Lane.enabled)
    func aBoardThatLosesPowerDuringAWriteIsReportedGoneNotAsAGattError(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 2, testbedArguments: ["--latency-ms", "1500"]) { fixture in
            try await fixture.waitUntilReady(2)
            let fleet = fixture.fleet
            let write = Task { await fleet.setLED(.all, on: true, timeout: .seconds(6)) }
            try await fixture.testbed.run(["board", "drop", "nano-01"])
            let result = await write.value
            let dropped = try #require(result.outcomes.first { $0.name == "nano-01" })
            #expect(!dropped.succeeded)
            #expect([.absent, .timeout, .notConnected].contains(dropped.error?.code), "\(String(describing: dropped.error))")
            #expect(result.outcomes.first { $0.name == "nano-02" }?.succeeded == true)
        }
    }

    /// A released link goes down at once on real BlueZ: through the kernel's management
    /// interface, not `Device1.Disconnect` (bluetoothd holds that for its 2 s disconnect
    /// timer, so anything under 2 s is the kernel's path); BlueZ keeps the board's GATT
    /// objects, so it is ready again from one connect. BlueZoo has no kernel: its releases go
    /// through `Device1.Disconnect`, and the board comes back the same.
    @Test(arguments: Lane.enabled)
    func aReleasedLinkGoesDownAtOnceAndTheBoardComesBackFromOneConnect(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 1) { fixture in
            #expect((fixture.testbed.managementSocket != nil) == (lane == .real))
            try await fixture.waitUntilReady(1)
            let fleet = fixture.fleet
            let started = ContinuousClock.now
            let released = await fleet.disconnect(.all)
            let took = ContinuousClock.now - started
            #expect(released.allSucceeded, "\(released.outcomes.compactMap(\.error))")
            try await fixture.waitForFleet(timeout: .seconds(2), "no link left") { $0.connectedCount == 0 }
            if lane == .real {
                #expect(took < .milliseconds(1500), "the release took \(took): bluetoothd's 2 s timer, not the kernel's path")
            }
            let result = await fleet.setLED(.all, on: true, timeout: .seconds(10))
            #expect(result.allSucceeded, "\(result.outcomes.compactMap(\.error))")
            let state = try await fixture.testbed.state()
            #expect(state.allSatisfy { $0.led == 1 })
        }
    }

    @Test(arguments: Lane.enabled)
    func resetBoardGetsItsLEDBackByItself(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 2) { fixture in
            try await fixture.waitUntilReady(2)
            let result = await fixture.fleet.setLED(.all, on: true)
            #expect(result.allSucceeded)
            let before = try #require(try await fixture.testbed.state().first { $0.name == "nano-01" })
            try await fixture.testbed.run(["board", "reset", "nano-01"])
            let state = try await fixture.waitForTestbed(timeout: .seconds(15), "LED re-applied after reset") {
                $0.first { $0.name == "nano-01" }.map { $0.led == 1 && $0.ledWrites > before.ledWrites } ?? false
            }
            #expect(state.allSatisfy { $0.led == 1 })
        }
    }

    /// The classroom's normal case: 15 boards, one adapter, the default configuration (7
    /// slots). The boards beyond the slots wait in standby (no connect, no backoff); `led on
    /// --all` without a timeout gets a deadline that fits its rotations and switches all 15;
    /// never more than 7 links at once; a temperature read during the rotation answers.
    @Test(arguments: Lane.enabled)
    func fifteenBoardsOnSevenSlotsSwitchInOneCallWithoutATimeout(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 15) { fixture in
            try await fixture.waitForFleet(timeout: .seconds(20), "15 boards adopted") { $0.boardCount == 15 }
            try await fixture.waitUntilReady(7, timeout: .seconds(30))
            let fleet = fixture.fleet
            // Settled: the 8 boards beyond the slots wait their turn, none backs off.
            let settled = try await fixture.waitForSnapshots(timeout: .seconds(20), "8 boards in standby") { boards in
                boards.filter { $0.phase == .standby }.count == 8
            }
            #expect(!settled.contains { $0.phase == .backingOff || $0.lastFailure != nil }, "\(settled.map(\.phase))")
            let events = fleet.events.subscribe(bufferSize: 4096)
            let most = Task {
                var most = 0
                for await _ in events { most = max(most, fleet.status.connectedCount) }
                return most
            }
            async let temperatures = fleet.readTemperature(.all, maxAge: .seconds(60))
            let result = await fleet.setLED(.all, on: true)
            #expect(result.outcomes.count == 15)
            #expect(result.allSucceeded, "failures: \(result.outcomes.compactMap(\.error))")
            let read = await temperatures
            #expect(read.allSucceeded, "temperature failures: \(read.outcomes.compactMap(\.error))")
            most.cancel()
            let state = try await fixture.testbed.state()
            #expect(state.allSatisfy { $0.led == 1 }, "\(state.filter { $0.led != 1 }.map(\.name))")
            let peak = await most.value
            #expect(peak <= 7, "\(peak) boards held a link at once")
        }
    }

    /// A deadline too short for the rotation: the boards still queued for a slot say so, each
    /// with its adapter and its place in the queue, never "pending" or gone; the boards that
    /// held a link were served.
    @Test(arguments: Lane.enabled)
    func boardsStillQueuedAtTheDeadlineSayWhereTheyAreInTheQueue(lane: Lane) async throws {
        // BlueZoo connects at once: a radio's pace there, so the rotation outlasts the deadline.
        let pace = lane == .bluezoo ? ["--latency-ms", "100"] : []
        try await FleetFixture.with(lane: lane, boards: 15, testbedArguments: pace) { fixture in
            try await fixture.waitForFleet(timeout: .seconds(20), "15 boards adopted") { $0.boardCount == 15 }
            let before = try await fixture.waitForSnapshots(timeout: .seconds(30), "7 ready, 8 in standby") { boards in
                boards.filter { $0.phase == .ready }.count == 7 && boards.filter { $0.phase == .standby }.count == 8
            }
            let waiting = Set(before.filter { $0.phase == .standby }.map(\.address))
            let result = await fixture.fleet.setLED(.all, on: true, timeout: .milliseconds(250))
            #expect(result.outcomes.count == 15)
            let queued = result.outcomes.filter { waiting.contains($0.address) }.compactMap(\.error)
            #expect(queued.allSatisfy { $0.code == .timeout }, "\(queued)")
            // Each board still in the queue says so, with its own place: 0, 1, 2… ahead of it.
            let places = queued.compactMap { error -> Int? in
                guard error.message.hasPrefix("Still waiting for a connection slot on hci0, ") else { return nil }
                return error.message.split(separator: ",").dropFirst().first
                    .flatMap { Int($0.split(separator: " ").first ?? "") }
            }
            #expect(!places.isEmpty, "\(queued.map(\.message))")
            #expect(
                places.sorted() == Array(0..<places.count),
                "\(result.outcomes.map { "\($0.address) \(waiting.contains($0.address) ? "standby" : "ready"): \($0.error?.message ?? "ok")" })")
        }
    }

    /// A classroom of 30 on one adapter's 7 slots (the default): `led on --all` and `led off
    /// --all` without a timeout switch all 30, each LED checked on its board. A D-Bus monitor
    /// of the bus is the referee (it trusts nothing the fleet says): never more than 7 links
    /// at once, and no `Connect` call made while 7 links were up or asked for.
    @Test(arguments: Lane.enabled)
    func thirtyBoardsOnSevenSlotsNeverPastTheLimitByTheBusReferee(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 30) { fixture in
            try await fixture.waitForFleet(timeout: .seconds(30), "30 boards adopted") { $0.boardCount == 30 }
            let settled = try await fixture.waitForSnapshots(timeout: .seconds(40), "7 ready, 23 in standby") { boards in
                boards.filter { $0.phase == .ready }.count == 7 && boards.filter { $0.phase == .standby }.count == 23
            }
            #expect(!settled.contains { $0.phase == .backingOff || $0.lastFailure != nil }, "\(settled.map(\.phase))")
            let referee = try await LinkReferee(watching: fixture.testbed)
            let fleet = fixture.fleet
            for on in [true, false] {
                let result = await fleet.setLED(.all, on: on)
                #expect(result.outcomes.count == 30)
                #expect(result.allSucceeded, "failures: \(result.outcomes.compactMap(\.error))")
                let state = try await fixture.testbed.state()
                #expect(state.count == 30 && state.allSatisfy { $0.led == (on ? 1 : 0) },
                        "\(state.filter { $0.led != (on ? 1 : 0) }.map(\.name))")
            }
            let report = try await referee.finish()
            let central = "/org/bluez/hci0"
            #expect((report.connectCalls[central] ?? 0) >= 23, "\(report)")
            #expect((report.mostAtConnect[central] ?? 0) <= 7, "a Connect call past the limit: \(report)")
            #expect((report.mostLinks[central] ?? 0) <= 7, "more than 7 links at once: \(report)")
        }
    }

    /// More boards than slots, and nobody asks: idle time reads the boards without a link
    /// in turn, so every board's temperature stays younger than `temperature-refresh-s`.
    @Test(arguments: Lane.enabled)
    func idleTimeKeepsEveryTemperatureFreshWithMoreBoardsThanSlots(lane: Lane) async throws {
        try await FleetFixture.with(
            lane: lane, boards: 6,
            configuration: { FleetConfiguration(connectionLimit: 2, temperatureRefresh: .seconds(8), stateDirectory: $0) }
        ) { fixture in
            try await fixture.waitForFleet(timeout: .seconds(20), "6 boards adopted") { $0.boardCount == 6 }
            let boards = try await fixture.waitForSnapshots(timeout: .seconds(40), "every temperature younger than 8 s") {
                boards in
                boards.count == 6 && boards.allSatisfy { ($0.temperature?.age(at: .now) ?? .seconds(99)) < .seconds(8) }
            }
            #expect(boards.allSatisfy { $0.temperature != nil })
            #expect(fixture.fleet.status.connectedCount <= 2)
        }
    }

    /// Reading idle boards in turn never overrides a user: a board disconnected by a call
    /// stays disconnected until a call needs it, however old its temperature gets.
    @Test(arguments: Lane.enabled)
    func connectionLimitThreeStillSwitchesTenBoards(lane: Lane) async throws {
        try await FleetFixture.with(
            lane: lane, boards: 10, configuration: { FleetConfiguration(connectionLimit: 3, stateDirectory: $0) }
        ) { fixture in
            try await fixture.waitForFleet(timeout: .seconds(15), "10 boards adopted") { $0.boardCount == 10 }
            try await fixture.waitUntilReady(3)
            // Never more than three links at once: sample the links after every fleet event
            // (every phase change) for the whole rotation.
            let fleet = fixture.fleet
            let events = fleet.events.subscribe(bufferSize: 4096)
            let most = Task {
                var most = 0
                for await _ in events {
                    most = max(most, fleet.status.connectedCount)
                }
                return most
            }
            // On real BlueZ every eviction takes bluetoothd's 2 s disconnect timer.
            let result = await fleet.setLED(.all, on: true, timeout: lane.allowing(.seconds(20)))
            most.cancel()
            #expect(result.outcomes.count == 10)
            #expect(result.allSucceeded, "failures: \(result.outcomes.compactMap(\.error))")
            let state = try await fixture.testbed.state()
            #expect(state.allSatisfy { $0.led == 1 })
            let peak = await most.value
            #expect(peak <= 3, "\(peak) boards held a link at once")
            #expect(peak >= 1)
            #expect(fleet.status.connectedCount <= 3)
        }
    }

    @Test(arguments: Lane.enabled)
    func aBoardInStandbyTakesASlotToBlinkAndGivesItBack(lane: Lane) async throws {
        try await FleetFixture.with(
            lane: lane, boards: 2, configuration: { FleetConfiguration(connectionLimit: 1, stateDirectory: $0) }
        ) { fixture in
            let fleet = fixture.fleet
            try await eventually("one board ready, the other in standby", within: lane.allowing(.seconds(15))) {
                let phases = await fleet.snapshots().map(\.phase)
                return phases.count == 2 && phases.contains(.ready) && phases.contains(.standby)
            }
            let waiting = try #require(await fleet.snapshots().first { $0.phase == .standby })
            let writes = try #require(try await fixture.testbed.state().first { $0.address == waiting.address.rawValue }?.ledWrites)
            // Never more links than the one slot, before, during and after the blink.
            let events = fleet.events.subscribe(bufferSize: 4096)
            let most = Task {
                var most = 0
                for await _ in events { most = max(most, fleet.status.connectedCount) }
                return most
            }
            // The lane's allowance, not the default 10 s: what is checked is where the slot goes,
            // and a loaded real lane once took longer to rotate it ("still waiting for a slot").
            let result = await fleet.identify(Selection([.address(waiting.address)]), timeout: lane.allowing(.seconds(10)))
            #expect(result.allSucceeded, "\(result.outcomes)")
            // It gave its slot back before the call answered (not later, when a reading or a
            // call of the other board takes it): no longer ready.
            let after = await fleet.snapshot(of: waiting.address)?.phase
            #expect(after != .ready, "the blinked board released its link when the blink was done (\(String(describing: after)))")
            let board = try #require(try await fixture.testbed.state().first { $0.address == waiting.address.rawValue })
            #expect(board.ledWrites - writes == 13, "six blinks and the LED put back")
            #expect(board.led != 1, "off, as nothing was asked")
            // Its slot given back: the fleet settles into one board ready and one in standby
            // again (which of them has the slot is the rotation's: on real BlueZ the released
            // board advertises at once and may take the slot back), never two links.
            try await eventually("one board ready, the other in standby, after the blink", within: lane.allowing(.seconds(10))) {
                let phases = await fleet.snapshots().map(\.phase)
                return phases.contains(.ready) && phases.contains(.standby)
            }
            most.cancel()
            #expect(await most.value <= 1, "never two links on one slot")
        }
    }

    @Test(arguments: Lane.enabled)
    func everyBoardIsReadyAgainAfterBlueZRestartAndAdapterPowerCycle(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 5) { fixture in
            try await fixture.waitUntilReady(5)
            try await fixture.testbed.run(["bluez", "restart"])
            try await fixture.waitForFleet(timeout: .seconds(10), "BlueZ gone") { !$0.bluezAvailable || $0.readyCount < 5 }
            try await fixture.waitUntilReady(5, timeout: .seconds(10))

            try await fixture.testbed.run(["adapter", "off"])
            try await fixture.waitForFleet(timeout: .seconds(10), "adapter off") { !$0.adapterPowered && $0.readyCount == 0 }
            let refused = await fixture.fleet.setLED(.all, on: true, timeout: .seconds(2))
            #expect(refused.outcomes.allSatisfy { $0.error?.code == .adapterOff })
            try await fixture.testbed.run(["adapter", "on"])
            try await fixture.waitUntilReady(5, timeout: .seconds(10))
            #expect(await fixture.fleet.setLED(.all, on: true).allSucceeded)
        }
    }

    @Test func desiredLEDAndAliasesSurviveARestartOfTheFleet() async throws {
        try await FleetFixture.with(boards: 2) { fixture in
            try await fixture.waitUntilReady(2)
            let result = await fixture.fleet.setLED(try Selection(parsing: ["nano-01"]), on: true)
            #expect(result.allSucceeded && result.outcomes.count == 1)
            let address = try #require(result.outcomes.first?.address)
            let events = fixture.fleet.events.subscribe(bufferSize: 1024)
            try await fixture.fleet.setAlias("bench-left", for: address)
            // Subscribers hear of it (a page or a bridge shows the new name).
            var told = false
            for await event in events {
                if case .event(.boardAliased(address, alias: "bench-left")) = event {
                    told = true
                    break
                }
            }
            #expect(told)
            let registry = Registry(directory: fixture.stateDirectory.path, logger: .init(label: "check"))
            let record = try #require(await registry.record(for: address))
            #expect(record.desiredLED == .on)
            #expect(record.alias == "bench-left")
            let byAlias = await fixture.fleet.readTemperature(try Selection(parsing: ["bench-left"]))
            #expect(byAlias.outcomes.map(\.address) == [address])
        }
    }

    /// The LED a user wanted is the board's, saved from there: the next run of the daemon
    /// (a new fleet on the same registry) puts it back on a board that lost it meanwhile.
    @Test func aWantedLEDIsPutBackByTheNextRun() async throws {
        try await FleetFixture.with(boards: 1) { fixture in
            try await fixture.waitUntilReady(1)
            #expect(await fixture.fleet.setLED(.all, on: true).allSucceeded)
            await fixture.fleet.shutdown()
            fixture.fleet.close()
            // The board restarted while no daemon ran: its LED is off.
            try await fixture.testbed.run(["board", "reset", "nano-01"])
            let before = try #require(try await fixture.testbed.state().first { $0.name == "nano-01" })
            #expect(before.led != 1)

            var logger = Logger(label: "blefleet.tests.fleet.next")
            logger.logLevel = .critical
            let next = try await Fleet.connect(
                bus: .address(fixture.testbed.busAddress),
                management: fixture.testbed.managementSocket.map { Fleet.Management.relay(path: $0) } ?? .none,
                adapters: .named("hci0"), configuration: FleetConfiguration(stateDirectory: fixture.stateDirectory.path),
                registry: Registry(directory: fixture.stateDirectory.path, logger: logger), logger: logger)
            defer { next.close() }
            let runner = Task { try await next.run() }
            defer { runner.cancel() }
            let state = try await fixture.waitForTestbed(timeout: .seconds(15), "the wanted LED put back by the next run") {
                $0.first { $0.name == "nano-01" }.map { $0.led == 1 && $0.ledWrites > before.ledWrites } ?? false
            }
            #expect(state.allSatisfy { $0.led == 1 })
            #expect(await next.snapshots().map(\.desiredLED) == [.on])
        }
    }

    @Test(arguments: Lane.enabled)
    func anyCharacteristicCanBeReadWrittenAndFollowed(lane: Lane) async throws {
        try await FleetFixture.with(lane: lane, boards: 2, testbedArguments: ["--notify-interval", "0.2"]) { fixture in
            try await fixture.waitUntilReady(2)
            try await fixture.testbed.run(["board", "temp", "all", "-7"])
            let fleet = fixture.fleet
            let read = await fleet.readCharacteristic(.all, service: BoardProfile.nano.sensor(named: "temperature")!.service, characteristic: BoardProfile.nano.sensor(named: "temperature")!.uuid)
            #expect(read.allSucceeded && read.outcomes.count == 2)
            #expect(read.outcomes.allSatisfy { $0.value == [0xF9] }, "-7 °C is the byte 0xF9")

            let write = await fleet.writeCharacteristic(
                .all, service: BoardProfile.nano.advertisedService, characteristic: BoardProfile.nano.switch(named: "led")!.uuid, value: [0x01])
            #expect(write.allSucceeded)
            #expect(try await fixture.testbed.state().allSatisfy { $0.led == 1 })

            let followed = await fleet.notifications(
                try Selection(parsing: ["nano-01"]), service: BoardProfile.nano.sensor(named: "temperature")!.service, characteristic: BoardProfile.nano.sensor(named: "temperature")!.uuid)
            let values = try #require(followed.outcomes.first?.value)
            var received: [[UInt8]] = []
            for try await value in values {
                received.append(value)
                if received.count == 2 { break }
            }
            #expect(received == [[0xF9], [0xF9]])

            let missing = await fleet.readCharacteristic(
                .all, service: GattUUID("FFE0")!, characteristic: GattUUID("FFE1")!)
            #expect(missing.outcomes.allSatisfy { $0.error?.code == .notFound })
        }
    }

    @Test func unknownSelectorsAreReportedNotIgnored() async throws {
        try await FleetFixture.with(boards: 1) { fixture in
            try await fixture.waitUntilReady(1)
            let result = await fixture.fleet.setLED(try Selection(parsing: ["nano-01", "lab-*"]), on: false)
            #expect(result.outcomes.count == 1)
            #expect(result.unmatched.map(\.description) == ["lab-*"])
            #expect(!result.allSucceeded)
        }
    }
}
