// blefleet-sim: the fleet's core in a deterministic simulation (a simulated radio and clock,
// seeded faults), classroom after classroom; every failure prints its seed, and `--seed`
// replays it exactly.
import FleetSimulation
import Foundation
import Logging

/// The command line (ArgumentParser's sync `main` would run before the runtime is ours; the
/// simulation takes the process's executor, so the arguments are read here, by hand, as few).
struct Options {
    var seed: UInt64?
    var firstSeed: UInt64 = 1
    var schedules = 200
    var budget: Double?
    var log = false
    var maxBoards = 40
    var partialRanges = false
    var calmCalls = false
    /// `--scenario NAME` (or `all`): scripted classrooms instead of seeded ones.
    var scenario: String?

    static let usage = """
        usage: blefleet-sim [--schedules N] [--first-seed S] [--budget SECONDS] [--max-boards N] [--partial-ranges] [--calm-calls]
               blefleet-sim --seed S [--log] [--partial-ranges] [--calm-calls]
               blefleet-sim --scenario NAME|all [--log]

        Runs the fleet's core against a simulated radio, one seeded classroom after another
        (1-40 boards, 1-3 adapters with limits 1-7, clients, faults), checking its promises;
        a failure prints its seed, and --seed replays that classroom exactly (--log: the
        fleet's log). --budget stops after that much CPU time. --partial-ranges: each adapter
        hears each board with a chance of 4 in 5 (else every adapter hears every board).
        --calm-calls: once the radio is calm again, a call with no timeout must switch every
        board within the deadline the fleet planned.
        --scenario: a scripted classroom that proves something does not happen over minutes
        of simulated time (\(Scenario.allCases.map(\.rawValue).joined(separator: ", ")); all: each).
        """

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value(_ name: String) throws -> String {
            guard let next = rest.popFirst() else { throw UsageError("\(name) needs a value") }
            return next
        }
        func number<T: FixedWidthInteger>(_ name: String) throws -> T {
            let text = try value(name)
            guard let number = T(text) else { throw UsageError("\(name) takes a whole number, not \"\(text)\"") }
            return number
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--seed": seed = try number(argument)
            case "--first-seed": firstSeed = try number(argument)
            case "--schedules": schedules = try number(argument)
            case "--max-boards": maxBoards = max(1, min(40, try number(argument)))
            case "--budget":
                let text = try value(argument)
                guard let seconds = Double(text), seconds > 0 else { throw UsageError("--budget takes seconds, not \"\(text)\"") }
                budget = seconds
            case "--log": log = true
            case "--partial-ranges": partialRanges = true
            case "--calm-calls": calmCalls = true
            case "--scenario":
                let name = try value(argument)
                guard name == "all" || Scenario(rawValue: name) != nil else {
                    throw UsageError("no scenario \"\(name)\"; there are \(Scenario.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                scenario = name
            case "-h", "--help": say(Self.usage); exit(0)
            default: throw UsageError("unknown argument \"\(argument)\"")
            }
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A line on standard output at once (a long run shows its failures as they come).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

// Dictionaries and sets iterate in an order seeded per process unless this is set before
// the process starts: the simulation runs itself again with it.
if getenv("SWIFT_DETERMINISTIC_HASHING") == nil {
    setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
    let arguments = CommandLine.unsafeArgv
    execv("/proc/self/exe", arguments)
    FileHandle.standardError.write(Data("blefleet-sim: could not run itself again: \(String(cString: strerror(errno)))\n".utf8))
    exit(2)
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("blefleet-sim: \(error)\n\n\(Options.usage)\n".utf8))
    exit(2)
}

let runtime = SimulationRuntime.shared
runtime.install()
// The fleet's registry and history go to memory where there is a tmpfs: their fsyncs cost
// nothing there, and a classroom's files live only as long as it does.
let scratchRoot = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : FileManager.default.temporaryDirectory.path
let scratch = "\(scratchRoot)/blefleet-sim-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: scratch) }

/// What the simulation runtime costs per step by itself: CPU seconds per job of two tasks
/// that only hand a number back and forth through two streams (each hand-over resumes the
/// other task: one job through the runtime's queue).
func runtimeCostPerStep() -> Double {
    let before = cpuSeconds()
    let (_, ran) = runtime.run(until: .seconds(1)) {
        let (pings, ping) = AsyncStream.makeStream(of: Int.self)
        let (pongs, pong) = AsyncStream.makeStream(of: Int.self)
        let echo = Task {
            for await number in pings { pong.yield(number) }
            pong.finish()
        }
        var replies = pongs.makeAsyncIterator()
        for number in 0..<50_000 {
            ping.yield(number)
            _ = await replies.next()
        }
        ping.finish()
        await echo.value
    }
    return (cpuSeconds() - before) / Double(max(ran, 1))
}

func play(_ seed: UInt64, logger: Logger) -> (Schedule, Classroom.Verdict) {
    let schedule = Schedule(seed: seed, boardRange: 1...options.maxBoards, partialRanges: options.partialRanges)
    let directory = "\(scratch)/\(seed)"
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let verdict = Classroom(schedule, calmCalls: options.calmCalls, logger: logger).run(in: runtime, stateDirectory: directory)
    return (schedule, verdict)
}

let quiet = Logger(label: "blefleet-sim") { _ in SwiftLogNoOpLogHandler() }

if let name = options.scenario {
    var logger = Logger(label: "blefleetd") { _ in VirtualTimeLogHandler(runtime: runtime) }
    logger.logLevel = .debug
    var failed = false
    for scenario in Scenario.allCases where name == "all" || scenario.rawValue == name {
        let directory = "\(scratch)/\(scenario.rawValue)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let started = runtime.elapsed
        let failures = scenario.run(in: runtime, stateDirectory: directory, logger: options.log ? logger : quiet)
        try? FileManager.default.removeItem(atPath: directory)
        say("\(failures.isEmpty ? "ok" : "FAILED") \(scenario.rawValue) (\(String(format: "%.0f", Double((runtime.elapsed - started).components.seconds))) s simulated): \(scenario.promise)")
        for failure in failures { say("  \(failure)") }
        failed = failed || !failures.isEmpty
    }
    if runtime.foreignJobs > 0 { say("NOT DETERMINISTIC: \(runtime.foreignJobs) jobs came from outside the simulation") }
    exit(!failed && runtime.foreignJobs == 0 ? 0 : 1)
}

if let seed = options.seed {
    var logger = Logger(label: "blefleetd") { _ in VirtualTimeLogHandler(runtime: runtime) }
    logger.logLevel = .debug
    let (schedule, verdict) = play(seed, logger: options.log ? logger : quiet)
    say("\(schedule)")
    for (at, fault) in schedule.faults { say("  \(at): \(fault)") }
    say("calls \(verdict.calls), connects \(verdict.connects), simulated \(verdict.virtualTime), steps \(verdict.steps)")
    say("converged \(verdict.convergedAfter.map { "\($0) after the faults" } ?? "never")")
    if runtime.foreignJobs > 0 { say("NOT DETERMINISTIC: \(runtime.foreignJobs) jobs came from outside the simulation") }
    for failure in verdict.failures { say("FAILED: \(failure)") }
    exit(verdict.failures.isEmpty && runtime.foreignJobs == 0 ? 0 : 1)
}

let started = cpuSeconds()
var ran = 0, failed = 0
var simulated: Duration = .zero
var steps = 0
var convergence: [Duration] = []
for offset in 0..<options.schedules {
    if let budget = options.budget, cpuSeconds() - started > budget { break }
    let seed = options.firstSeed + UInt64(offset)
    let (schedule, verdict) = play(seed, logger: quiet)
    ran += 1
    simulated += verdict.virtualTime
    steps += verdict.steps
    if let after = verdict.convergedAfter { convergence.append(after) }
    if !verdict.failures.isEmpty {
        failed += 1
        say("FAILED \(schedule)\n  \(verdict.failures.prefix(3).joined(separator: "\n  "))\n  replay: blefleet-sim --seed \(seed)\(options.partialRanges ? " --partial-ranges" : "")\(options.calmCalls ? " --calm-calls" : "") --log")
    }
}
// The first classroom once more: the same seed must take the very same steps.
var replayed = true
if ran > 0 {
    let seed = options.firstSeed
    let first = play(seed, logger: quiet).1
    let again = play(seed, logger: quiet).1
    replayed = (first.steps, first.virtualTime, first.calls, first.connects, first.failures)
        == (again.steps, again.virtualTime, again.calls, again.connects, again.failures)
    say(replayed
        ? "seed \(seed) replayed exactly: \(first.steps) steps, \(first.virtualTime) simulated, \(first.connects) connects"
        : "NOT REPLAYABLE: seed \(seed) took \(first.steps) steps and \(first.connects) connects, then \(again.steps) and \(again.connects)")
}
let cpu = cpuSeconds() - started
convergence.sort()
let perMinute = cpu > 0 ? Double(ran) / cpu * 60 : 0
say(String(format: "%d classrooms (seeds %llu-%llu), %d failed; %.1f s CPU, %.0f classrooms per CPU-minute; %.1f h simulated",
    ran, options.firstSeed, options.firstSeed + UInt64(max(ran, 1) - 1), failed, cpu, perMinute, Double(simulated.components.seconds) / 3600))
if ran > 0 {
    // The floor: what the runtime alone costs per step (a task that only yields), times
    // the steps a classroom took.
    let perStep = runtimeCostPerStep()
    let stepsPerClassroom = Double(steps) / Double(ran)
    say(String(format: "%.0f steps per classroom, %.2f µs of CPU each; the runtime alone: %.2f µs a step, a floor of %.0f classrooms per CPU-minute",
        stepsPerClassroom, cpu / Double(steps) * 1e6, perStep * 1e6, 60 / (perStep * stepsPerClassroom)))
}
if !convergence.isEmpty {
    say("every wanted LED on its board after the faults: median \(convergence[convergence.count / 2]), slowest \(convergence.last!)")
}
if runtime.foreignJobs > 0 { say("NOT DETERMINISTIC: \(runtime.foreignJobs) jobs came from outside the simulation") }
exit(failed == 0 && replayed && runtime.foreignJobs == 0 ? 0 : 1)
