import BlueZ
import FleetCore
import FleetModel
import Foundation
public import Logging
import Synchronization

/// One simulated classroom: the fleet (the daemon's core, unchanged) on a ``SimulatedRadio``,
/// a teacher switching LEDs, readers reading temperatures, the schedule's faults, and a
/// referee checking the fleet's promises after every call and at the end.
public struct Classroom: Sendable {
    public let schedule: Schedule
    let logger: Logger

    /// Whether the referee also makes the calm calls (``play(_:calmCalls:clock:stateDirectory:logger:)``).
    public let calmCalls: Bool

    public init(_ schedule: Schedule, calmCalls: Bool = false, logger: Logger) {
        self.schedule = schedule
        self.calmCalls = calmCalls
        self.logger = logger
    }

    /// What the referee saw.
    public struct Verdict: Sendable {
        public var failures: [String] = []
        /// After the faults ended, when every wanted LED was on its board (nil: never).
        public var convergedAfter: Duration?
        public var calls = 0
        public var connects = 0
        public var virtualTime: Duration = .zero
        public var steps = 0
    }

    /// How long the calm calls may take, in the time limit of a classroom that makes them:
    /// the wait for every adapter to work (60 s at most), then two `led.set` of every board,
    /// each as many rotations as boards per slot, at a generous 3 s each. The calls are judged
    /// by their own deadlines (the fleet's plan); the limit only ends a classroom that hangs.
    /// (Without it, seed 852, 40 boards through one slot, finished 6 s inside the limit at
    /// 4561045 and a few seconds past it later, a slightly slower rotation, not a hang.)
    static func calmAllowance(_ schedule: Schedule) -> Duration {
        let slots = max(1, schedule.limits.reduce(0, +))
        let rotations = (schedule.boards.count + slots - 1) / slots
        return .seconds(60) + .seconds(3) * (2 * rotations)
    }

    /// Runs the classroom in the simulation runtime (which must be installed) until the
    /// convergence bound after the faults; returns what the referee saw.
    public func run(in runtime: SimulationRuntime, stateDirectory: String) -> Verdict {
        let verdict = Mutex(Verdict())
        let schedule = self.schedule
        let logger = self.logger
        let start = runtime.elapsed
        let limit = schedule.faultsEnd + schedule.convergenceBound + (calmCalls ? Self.calmAllowance(schedule) : .zero) + .seconds(30)
        let (ending, steps) = runtime.run(until: limit) {
            let outcome = await Self.play(
                schedule, calmCalls: calmCalls, clock: runtime.clock, stateDirectory: stateDirectory, logger: logger)
            verdict.withLock { $0 = outcome }
        }
        return verdict.withLock { verdict in
            verdict.steps = steps
            verdict.virtualTime = runtime.elapsed - start
            switch ending {
            case .finished: break
            case .timeLimit: verdict.failures.append("the classroom did not finish within \(limit) of simulated time")
            case .stalled: verdict.failures.append("every task waited for something that never came (nothing to run, nobody sleeping)")
            case .livelock(let at):
                verdict.failures.append("a livelock: \(SimulationRuntime.livelockSteps) jobs ran at \(at) of simulated time without the clock moving")
            }
            return verdict
        }
    }

    static func play(
        _ schedule: Schedule, calmCalls: Bool, clock: SimulatedClock, stateDirectory: String, logger: Logger
    ) async -> Verdict {
        let (radio, client, fleet) = SimulatedFleet.make(
            seed: schedule.seed, boards: schedule.boards, ranges: schedule.ranges, limits: schedule.limits,
            clock: clock, registryExecutor: SimulationRuntime.shared.serialExecutor, stateDirectory: stateDirectory, logger: logger)
        let referee = Referee()

        let running = Task { try? await fleet.run() }
        let air = SimulatedFleet.air(radio, mirror: client.mirror, clock: clock)
        let faults = Task {
            let origin = clock.now
            for (at, fault) in schedule.faults {
                guard (try? await clock.sleep(until: origin + at)) != nil else { return }
                referee.note("\(clock.since(origin)): \(fault)")
                let radio = radio
                Task { await radio.apply(fault) }
            }
        }
        let origin = clock.now
        let end = origin + schedule.faultsEnd
        // The teacher switches LEDs (all, or some) one call after another; readers read.
        let teacher = Task {
            var random = SeededRandomNumberGenerator(seed: schedule.seed ^ 0x7EAC_4E5)
            guard (try? await clock.sleep(for: .seconds(6))) != nil else { return }
            var first = true
            while clock.now < end {
                let on = first ? true : random.chance(0.6)
                let some = !first && random.chance(0.4)
                let selection = some
                    ? Selection(schedule.boards.filter { _ in random.chance(0.5) }.compactMap { BoardAddress($0) }.map { .address($0) })
                    : .all
                first = false
                let timeout: Duration = [.seconds(5), .seconds(15), .seconds(30)].randomElement(using: &random)!
                if !selection.selectors.isEmpty {
                    let called = clock.now
                    let result = await fleet.setLED(selection, on: on, timeout: timeout)
                    referee.check(
                        result, selection: selection, timeout: timeout, took: clock.since(called),
                        what: "led.set \(on ? "on" : "off")")
                    referee.want(result.outcomes.map(\.address), on: on)
                }
                guard (try? await clock.sleep(for: random.duration(.seconds(3)...(.seconds(20))))) != nil else { return }
            }
        }
        let readers = (0..<schedule.readers).map { reader in
            Task {
                var random = SeededRandomNumberGenerator(seed: schedule.seed ^ UInt64(reader + 1) << 32)
                while clock.now < end {
                    guard (try? await clock.sleep(for: random.duration(.seconds(2)...(.seconds(12))))) != nil else { return }
                    let one = random.chance(0.5) ? schedule.boards.randomElement(using: &random).flatMap(BoardAddress.init) : nil
                    let selection = one.map { Selection([.address($0)]) } ?? .all
                    let called = clock.now
                    let result = await fleet.readTemperature(selection, timeout: .seconds(5))
                    referee.check(result, selection: selection, timeout: .seconds(5), took: clock.since(called), what: "temperature.read")
                }
            }
        }
        await teacher.value
        for reader in readers { await reader.value }
        await faults.value
        _ = try? await clock.sleep(until: end)

        // The faults are over: every wanted LED must be on its board within the bound.
        var converged: Duration?
        let deadline = end + schedule.convergenceBound
        while clock.now <= deadline {
            let leds = radio.leds
            let wanted = referee.wanted
            if wanted.allSatisfy({ leds[$0.key.rawValue] == $0.value }) {
                converged = clock.since(end)
                break
            }
            guard (try? await clock.sleep(for: .milliseconds(250))) != nil else { break }
        }
        if converged == nil {
            let leds = radio.leds
            let wrong = referee.wanted.filter { leds[$0.key.rawValue] != $0.value }.keys.sorted()
            let snapshots = await fleet.snapshots()
            let phases = snapshots.filter { wrong.contains($0.address) }.map { "\($0.address) \($0.phase) via \($0.adapter ?? "-") desired \($0.desiredLED)" }
            referee.fail(
                "\(wrong.count) wanted LEDs were not on their boards \(schedule.convergenceBound) after the faults ended: "
                    + phases.joined(separator: "; "))
        }
        // Calm again (a hang lasts until the fleet resets the adapter): a call with no timeout
        // gets a deadline that fits its rotations (the fleet's plan), and every board is
        // switched within it, off and then on, once the fleet has every adapter working.
        let calmBy = clock.now + .seconds(60)
        while calmCalls, clock.now < calmBy, !(radio.isCalm && fleet.status.adapters.allSatisfy { $0.health == .ok }) {
            guard (try? await clock.sleep(for: .milliseconds(250))) != nil else { break }
        }
        if calmCalls, converged != nil, radio.isCalm {
            for on in [false, true] {
                let called = clock.now
                let result = await fleet.setLED(.all, on: on)
                referee.want(result.outcomes.map(\.address), on: on)
                let failed = result.outcomes.filter { !$0.succeeded }
                if !failed.isEmpty {
                    referee.fail(
                        "led.set \(on ? "on" : "off") of every board with no timeout, after the faults, answered after "
                            + "\(clock.since(called)) with \(failed.count) of \(result.outcomes.count) failed: "
                            + failed.map { "\($0.address) \($0.error?.message ?? "?")" }.joined(separator: "; "))
                    break
                }
            }
        }
        // No link the fleet does not know of: one it shows no link for (or another adapter),
        // still there 15 s later (a link being released or made is a moment, not an orphan).
        func orphans() async -> [String: String] {
            let snapshots = await fleet.snapshots()
            var found: [String: String] = [:]
            for (address, adapter) in radio.links {
                let known = snapshots.first { $0.address.rawValue == address }
                let holds: Set<BoardPhase> = [.connecting, .resolving, .ready, .disconnecting]
                if known?.adapter != adapter || !(known.map { holds.contains($0.phase) } ?? false) {
                    found[address] = "\(address) is linked through \(adapter), the fleet says "
                        + (known.map { "\($0.phase) via \($0.adapter ?? "-")" } ?? "nothing")
                }
            }
            return found
        }
        let suspects = await orphans()
        if !suspects.isEmpty {
            _ = try? await clock.sleep(for: .seconds(15))
            let still = await orphans()
            for address in suspects.keys.sorted() where still[address] != nil {
                referee.fail("an orphan link: \(still[address]!) (and 15 s before: \(suspects[address]!))")
            }
        }
        for violation in radio.violations { referee.fail(violation) }

        air.cancel()
        faults.cancel()
        running.cancel()
        await running.value
        await air.value
        var verdict = Verdict()
        verdict.failures = referee.failures
        verdict.convergedAfter = converged
        verdict.calls = referee.calls
        verdict.connects = radio.connectCalls
        return verdict
    }
}

/// The referee's notes: failures, what was wanted of each board, what happened.
final class Referee: Sendable {
    private struct Notes {
        var failures: [String] = []
        var wanted: [BoardAddress: Bool] = [:]
        var calls = 0
        var timeline: [String] = []
    }
    private let notes = Mutex(Notes())

    var failures: [String] { notes.withLock { $0.failures } }
    var wanted: [BoardAddress: Bool] { notes.withLock { $0.wanted } }
    var calls: Int { notes.withLock { $0.calls } }

    func note(_ line: String) { notes.withLock { $0.timeline.append(line) } }

    func fail(_ failure: String) { notes.withLock { $0.failures.append(failure) } }

    func want(_ boards: [BoardAddress], on: Bool) {
        notes.withLock { notes in for board in boards { notes.wanted[board] = on } }
    }

    /// Every call is answered by its deadline, with one result per board.
    func check<Value>(_ result: FleetResult<Value>, selection: Selection, timeout: Duration, took: Duration, what: String) {
        notes.withLock { $0.calls += 1 }
        let addresses = result.outcomes.map(\.address)
        if Set(addresses).count != addresses.count {
            fail("\(what) answered twice for a board: \(addresses.map(\.rawValue))")
        }
        let named = selection.selectors.compactMap { selector -> BoardAddress? in
            if case .address(let address) = selector { return address }
            return nil
        }
        if !named.isEmpty, Set(named) != Set(addresses).union(result.unmatched.compactMap { if case .address(let a) = $0 { a } else { nil } }) {
            fail("\(what) of \(named.count) boards answered for \(addresses.count)")
        }
        if took > timeout + .seconds(1) {
            fail("\(what) with a timeout of \(timeout) answered after \(took)")
        }
    }
}
