import BlueZ
import FleetCore
import FleetModel
public import Logging
import Synchronization

/// Scripted classrooms for promises that something does *not* happen: each runs minutes of
/// simulated time in milliseconds, where a test on a testbed could only wait a few seconds
/// and hope. `blefleet-sim --scenario NAME` runs one; the test suite runs them all.
public enum Scenario: String, CaseIterable, Sendable {
    case disconnectedBoardStaysDisconnected = "disconnected-board-stays-disconnected"
    case absentBoardIsNotConnectedBlindly = "absent-board-is-not-connected-blindly"
    case settledFleetLeavesItsLinksAlone = "settled-fleet-leaves-its-links-alone"
    case identifyCutShortPutsTheLEDBack = "identify-cut-short-puts-the-led-back"
    case stalledControllerIsResetAndItsBoardsServed = "stalled-controller-is-reset-and-its-boards-served"
    case deadControllerIsResetAndItsBoardsServed = "dead-controller-is-reset-and-its-boards-served"

    /// What the scenario checks.
    public var promise: String {
        switch self {
        case .disconnectedBoardStaysDisconnected:
            "a board a user disconnected is not connected again by the fleet (not even to read its temperature, "
                + "every second) for 10 minutes, while the other board's temperature stays fresh"
        case .absentBoardIsNotConnectedBlindly:
            "a board that lost power gets no Connect for 10 minutes (it does not advertise), and is ready with "
                + "its LED within 10 s of being powered again"
        case .settledFleetLeavesItsLinksAlone:
            "with a slot for every board, a settled fleet makes no Connect and drops no link for 10 minutes"
        case .identifyCutShortPutsTheLEDBack:
            "a board whose link falls while it blinks to show itself (its LED never asked for) has its LED off "
                + "again within 10 s of coming back in range, and the identify says it failed"
        case .stalledControllerIsResetAndItsBoardsServed:
            "of two adapters, the one holding every board's link stalls with its links alive at the boards: it is "
                + "reset within 10 s of the hang; an LED switched off as it hung is off, and a led.set of every board is "
                + "answered by all, within 15 s"
        case .deadControllerIsResetAndItsBoardsServed:
            "of two adapters, the one holding every board's link dies, its links ending at the boards: it is reset "
                + "within 10 s of the hang; an LED switched off as it hung is off, and a led.set of every board is "
                + "answered by all, within 15 s"
        }
    }

    static let quiet: Duration = .seconds(600)

    /// Runs the scenario in the simulation runtime (which must be installed); its failures,
    /// none when the promise held.
    public func run(in runtime: SimulationRuntime, stateDirectory: String, logger: Logger) -> [String] {
        let failures = Mutex<[String]>([])
        let scenario = self
        let (ending, _) = runtime.run(until: .seconds(1200)) {
            let found = await scenario.play(clock: runtime.clock, stateDirectory: stateDirectory, logger: logger)
            failures.withLock { $0 = found }
        }
        var all = failures.withLock { $0 }
        if ending != .finished { all.append("the scenario did not finish: \(ending)") }
        return all
    }

    private func play(clock: SimulatedClock, stateDirectory: String, logger: Logger) async -> [String] {
        let hang: Bool? =
            switch self {
            case .stalledControllerIsResetAndItsBoardsServed: true
            case .deadControllerIsResetAndItsBoardsServed: false
            default: nil
            }
        let count = hang != nil ? 6 : (self == .settledFleetLeavesItsLinksAlone ? 5 : 3)
        let boards = (1...count).map { String(format: "C0:FF:EE:00:5C:%02X", $0) }
        // For a hang, hci1 hears no board at first: every link is hci0's; then it hears them all.
        let ranges = hang != nil ? Dictionary(uniqueKeysWithValues: boards.map { ($0, Set([0])) }) : [:]
        let (radio, client, fleet) = SimulatedFleet.make(
            seed: 1, boards: boards, ranges: ranges, limits: hang != nil ? [7, 7] : [7], temperatureRefresh: .seconds(1), clock: clock,
            registryExecutor: SimulationRuntime.shared.serialExecutor, stateDirectory: stateDirectory, logger: logger)
        let running = Task { try? await fleet.run() }
        let air = SimulatedFleet.air(radio, mirror: client.mirror, clock: clock)
        defer {
            air.cancel()
            running.cancel()
        }
        var failures: [String] = []
        /// Whether `condition` holds within `bound` of simulated time (looked at every 250 ms).
        func within(_ bound: Duration, _ condition: () async -> Bool) async -> Bool {
            let end = clock.now + bound
            while clock.now <= end {
                if await condition() { return true }
                guard (try? await clock.sleep(for: .milliseconds(250))) != nil else { return false }
            }
            return false
        }
        func phase(_ address: String) async -> BoardPhase? {
            await fleet.snapshots().first { $0.address.rawValue == address }?.phase
        }
        guard await within(.seconds(30), { await fleet.snapshots().filter { $0.phase == .ready }.count == boards.count }) else {
            return ["the boards were not all ready 30 s after the start: \(await fleet.snapshots().map { "\($0.address) \($0.phase)" })"]
        }
        let first = boards[0]
        switch self {
        case .disconnectedBoardStaysDisconnected:
            let released = await fleet.disconnect(Selection([.address(BoardAddress(first)!)]))
            if !released.allSucceeded { failures.append("the disconnect failed: \(released.outcomes)") }
            let connects = radio.connects(of: first)
            _ = try? await clock.sleep(for: Self.quiet)
            if radio.connects(of: first) != connects {
                failures.append("\(first) was connected again \(radio.connects(of: first) - connects) times after its disconnect")
            }
            if let now = await phase(first), now != .discovered { failures.append("\(first) is \(now), not discovered") }
            let reading = await fleet.readTemperature(Selection([.address(BoardAddress(boards[1])!)]), timeout: .seconds(5))
            if let age = reading.outcomes.first?.value?.age, age > .seconds(3) {
                failures.append("\(boards[1])'s temperature was \(age) old: the sampler stopped")
            } else if !reading.allSucceeded {
                failures.append("\(boards[1])'s temperature could not be read: \(reading.outcomes)")
            }
        case .absentBoardIsNotConnectedBlindly:
            _ = await fleet.setLED(.all, on: true)
            await radio.apply(.boardLosesPower(first))
            let connects = radio.connects(of: first)
            _ = try? await clock.sleep(for: Self.quiet)
            if radio.connects(of: first) != connects {
                failures.append("\(first) got \(radio.connects(of: first) - connects) Connect calls while it was powered off")
            }
            await radio.apply(.boardPowered(first))
            if !(await within(.seconds(10), { radio.leds[first] == true })) {
                failures.append("\(first) was powered again and its LED was not on 10 s later (it is \(await phase(first).map { "\($0)" } ?? "?"))")
            }
        case .identifyCutShortPutsTheLEDBack:
            let selection = Selection([.address(BoardAddress(first)!)])
            let identify = Task { await fleet.identify(selection) }
            guard await within(.seconds(10), { radio.leds[first] == true }) else {
                return ["\(first) did not start blinking within 10 s of identify"]
            }
            await radio.apply(.boardLeaves(first, adapter: 0))
            let result = await identify.value
            if result.allSucceeded { failures.append("the identify cut short succeeded: \(result.outcomes)") }
            if radio.leds[first] != true { return ["\(first)'s LED was not left on by the blink cut short: the scenario tests nothing"] }
            _ = try? await clock.sleep(for: .seconds(5))
            await radio.apply(.boardReturns(first, adapter: 0))
            if !(await within(.seconds(10), { radio.leds[first] == false })) {
                failures.append("\(first)'s LED was still on 10 s after it came back (it is \(await phase(first).map { "\($0)" } ?? "?"))")
            }
        case .stalledControllerIsResetAndItsBoardsServed, .deadControllerIsResetAndItsBoardsServed:
            _ = await fleet.setLED(.all, on: true)
            for board in boards { await radio.apply(.boardReturns(board, adapter: 1)) }
            guard radio.links.values.allSatisfy({ $0 == "hci0" }), radio.leds.values.allSatisfy({ $0 }) else {
                return ["before the hang, not every board was linked through hci0 with its LED on: \(radio.links) \(radio.leds)"]
            }
            let hungAt = clock.now
            await radio.apply(.hang(adapter: 0, linksLive: hang == true))
            // A teacher switches every LED off at that moment: the call is served once the
            // boards are (through whichever adapter takes them).
            let switched = Task { await fleet.setLED(.all, on: false) }
            if !(await within(.seconds(10), { !radio.isHung(0) })) {
                failures.append("hci0 was not reset within 10 s of its hang")
            }
            let served = await within(.seconds(15) - clock.since(hungAt)) {
                let ready = await fleet.snapshots().filter { $0.phase == .ready }.count
                return ready == boards.count && radio.leds.values.allSatisfy { !$0 }
            }
            if !served {
                failures.append(
                    "15 s after hci0 hung, not every board was ready with its LED off as asked: "
                        + "\(await fleet.snapshots().map { "\($0.address) \($0.phase) via \($0.adapter ?? "-")" }); LEDs \(radio.leds)")
            }
            // The call made as it hung may wait out its time (it is applied when the board is
            // back: "pending"); one made after it, like the benchmark's client each second, is
            // answered by every board within 15 s of the hang.
            for outcome in await switched.value.outcomes where !outcome.succeeded && outcome.pending != true {
                failures.append("led.set off, called as hci0 hung, failed for \(outcome.address) and was dropped: \(outcome.error?.message ?? "?")")
            }
            var answered = false
            while !answered, clock.since(hungAt) < .seconds(15) {
                answered = await fleet.setLED(.all, on: true).allSucceeded
                if !answered { _ = try? await clock.sleep(for: .seconds(1)) }
            }
            if !answered || clock.since(hungAt) > .seconds(15) {
                failures.append("no led.set of every board was answered by all of them within 15 s of the hang (\(clock.since(hungAt)))")
            }
        case .settledFleetLeavesItsLinksAlone:
            let links = radio.links
            let connects = radio.connectCalls
            _ = try? await clock.sleep(for: Self.quiet)
            if radio.connectCalls != connects { failures.append("\(radio.connectCalls - connects) Connect calls in a settled fleet") }
            if radio.links != links { failures.append("the links changed from \(links) to \(radio.links)") }
        }
        for violation in radio.violations { failures.append(violation) }
        return failures
    }
}
