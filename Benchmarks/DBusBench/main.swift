// dbus-bench: round-trip latency of org.freedesktop.DBus.Peer.Ping to the bus daemon through
// the DBus engine vs libdbus's own blocking call, and throughput with 64 calls in flight.
//
//   swift build -c release --product dbus-bench
//   .build/release/dbus-bench [BUS_ADDRESS] [--calls N]
//
// Without an address (argument or DBUS_BENCH_ADDRESS) it starts a private dbus-daemon.
import CDBus
import DBus
import Foundation

struct Options {
    var address: String?
    var calls = 20_000
    var inFlight = 64

    init(_ arguments: [String]) throws {
        var rest = arguments.dropFirst()
        while let argument = rest.popFirst() {
            switch argument {
            case "--calls": calls = Int(rest.popFirst() ?? "") ?? calls
            case "--in-flight": inFlight = Int(rest.popFirst() ?? "") ?? inFlight
            case "-h", "--help":
                print("usage: dbus-bench [BUS_ADDRESS] [--calls N] [--in-flight N]")
                exit(0)
            default: address = argument
            }
        }
        if address == nil { address = ProcessInfo.processInfo.environment["DBUS_BENCH_ADDRESS"] }
    }
}

struct BenchError: Error, CustomStringConvertible { let description: String }

/// A private dbus-daemon, killed on `stop()`.
final class Daemon {
    let process = Process()
    let address: String

    init() throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var line = Data()
        while true {
            let byte = out.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([0x0A]) { break }
            line.append(byte)
        }
        address = String(decoding: line, as: UTF8.self)
        if address.isEmpty { throw BenchError(description: "dbus-daemon printed no address") }
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

struct Stats {
    let median: Double
    let p99: Double
    let mean: Double

    init(_ samples: [Duration]) {
        let micros = samples.map { Double($0.components.attoseconds) / 1e12 + Double($0.components.seconds) * 1e6 }.sorted()
        median = micros[micros.count / 2]
        p99 = micros[min(micros.count - 1, Int(Double(micros.count) * 0.99))]
        mean = micros.reduce(0, +) / Double(micros.count)
    }

    var text: String { String(format: "median %7.1f µs   p99 %7.1f µs   mean %7.1f µs", median, p99, mean) }
}

/// libdbus's own blocking round trip on a connection of its own (the baseline).
final class Baseline {
    let conn: OpaquePointer

    init(address: String) throws {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        guard let conn = dbus_connection_open_private(address, &error), dbus_bus_register(conn, &error) != 0 else {
            throw BenchError(description: "baseline connection failed")
        }
        self.conn = conn
    }

    deinit {
        dbus_connection_close(conn)
        dbus_connection_unref(conn)
    }

    func run(calls: Int) throws -> [Duration] {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        let clock = ContinuousClock()
        var samples: [Duration] = []
        samples.reserveCapacity(calls)
        for _ in 0..<calls {
            let start = clock.now
            let message = dbus_message_new_method_call(
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping")
            let reply = dbus_connection_send_with_reply_and_block(conn, message, 25_000, &error)
            dbus_message_unref(message)
            guard let reply else { throw BenchError(description: "baseline Ping failed") }
            dbus_message_unref(reply)
            samples.append(clock.now - start)
        }
        return samples
    }
}

func ping(_ connection: DBusConnection) async throws {
    _ = try await connection.call(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus.Peer", member: "Ping")
}

func engineSequential(_ connection: DBusConnection, calls: Int) async throws -> [Duration] {
    let clock = ContinuousClock()
    var samples: [Duration] = []
    samples.reserveCapacity(calls)
    for _ in 0..<calls {
        let start = clock.now
        try await ping(connection)
        samples.append(clock.now - start)
    }
    return samples
}

func engineThroughput(_ connection: DBusConnection, calls: Int, inFlight: Int) async throws -> Double {
    let clock = ContinuousClock()
    let perTask = max(1, calls / inFlight)
    let start = clock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<inFlight {
            group.addTask { for _ in 0..<perTask { try await ping(connection) } }
        }
        try await group.waitForAll()
    }
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(perTask * inFlight) / seconds
}

@main
enum DBusBench {
    static func main() async throws {
        let options = try Options(CommandLine.arguments)
        var daemon: Daemon?
        let address: String
        if let given = options.address {
            address = given
        } else {
            daemon = try Daemon()
            address = daemon!.address
        }
        defer { daemon?.stop() }
        print("bus: \(address)\(daemon == nil ? "" : " (private dbus-daemon started by dbus-bench)")")
        print("calls: \(options.calls) sequential Peer.Ping to org.freedesktop.DBus each way, in 10 alternating rounds (after 1000 warm-up calls each)")

        let baseline = try Baseline(address: address)
        let connection = try await DBusConnection.connect(to: .address(address))
        _ = try baseline.run(calls: 1000)
        _ = try await engineSequential(connection, calls: 1000)
        // Alternate so both see the same background load on a shared machine.
        var blockingSamples: [Duration] = []
        var engineSamples: [Duration] = []
        let perRound = max(1, options.calls / 10)
        for _ in 0..<10 {
            blockingSamples += try baseline.run(calls: perRound)
            engineSamples += try await engineSequential(connection, calls: perRound)
        }
        let blocking = Stats(blockingSamples)
        let engine = Stats(engineSamples)
        // Warm up the concurrent path, then measure.
        _ = try await engineThroughput(connection, calls: 2_000, inFlight: options.inFlight)
        let throughput = try await engineThroughput(
            connection, calls: max(options.calls, 50_000), inFlight: options.inFlight)
        withExtendedLifetime((connection, baseline)) {}
        connection.close()

        print("libdbus send_with_reply_and_block: \(blocking.text)")
        print("DBus engine (async call):          \(engine.text)")
        print(String(format: "ratio engine/libdbus (median):      %.2fx   (goal <= 1.5x)", engine.median / blocking.median))
        print(String(format: "throughput, %d in flight:           %.0f calls/s   (goal >= 15000)", options.inFlight, throughput))
    }
}
