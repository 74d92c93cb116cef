import FleetRPC
import JSONRPC
import FleetRPCClient
import Foundation
import TestSupport
import Testing

/// The real daemon binary, the real socket, blectl, on the testbed (both lanes where the
/// radio matters).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct BlefleetdEndToEndTests {
    /// Waits (bounded) until the daemon reports `count` ready boards.
    static func waitForReadyBoards(_ count: Int, socket: String, lane: Lane = .bluezoo, timeout: TimeInterval = 20)
        async throws
    {
        let timeout = lane == .real ? timeout * 4 : timeout
        var last = ""
        try await eventually(
            "the daemon reports \(count) ready boards", within: .seconds(timeout), every: .milliseconds(100), otherwise: "last: \(last)"
        ) {
            let output = try await Blectl.run(["--socket", socket, "--json", "status"], timeout: .seconds(5))
            last = output.description
            guard output.status == 0, let status = try? JSONValue(parsing: output.stdout) else { return false }
            return status["boards"]?["ready"]?.int64Value == Int64(count)
        }
    }

    @Test(arguments: Lane.enabled)
    func ledOnAllAndTemperatureTableThroughTheDaemon(lane: Lane) async throws {
        try await RunningDaemon.with(lane: lane, boards: 5) { testbed, daemon in
            try await testbed.run(["board", "temp", "nano-03", "-5"])
            try await Self.waitForReadyBoards(5, socket: daemon.socket, lane: lane)

            let led = try await Blectl.run(["--socket", daemon.socket, "led", "on", "--all"])
            #expect(led.status == 0, "\(led)")
            #expect(led.stdout.contains("5/5 boards on"), "\(led)")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })

            // --fresh: the change to -5 °C was made after the daemon cached a notification.
            let temp = try await Blectl.run(["--socket", daemon.socket, "temp", "--fresh"])
            #expect(temp.status == 0, "\(temp)")
            #expect(temp.stdout.contains("-5 °C"), "\(temp)")

            let json = try await Blectl.run(["--socket", daemon.socket, "--json", "temp", "--fresh"])
            let readings = try JSONValue(parsing: json.stdout)
            let state = try await testbed.state()
            for entry in readings["results"]?.arrayValue ?? [] {
                let board = try #require(state.first { $0.address == entry["address"]?.stringValue })
                #expect(entry["celsius"]?.int64Value == Int64(board.temperature))
            }
            #expect(readings["totals"]?["ok"]?.int64Value == 5)
        }
    }

    /// Polls `blectl --json boards` (bounded) until `condition` holds for the boards.
    static func waitForBoards(
        socket: String, lane: Lane, _ what: String, _ condition: ([JSONValue]) -> Bool
    ) async throws -> [JSONValue] {
        var last: [JSONValue] = []
        try await eventually(
            "the daemon's boards show \(what)", within: lane.allowing(.seconds(20)), every: .milliseconds(100), otherwise: "last: \(last)"
        ) {
            let output = try await Blectl.run(["--socket", socket, "--json", "boards"], timeout: .seconds(5))
            last = (try? JSONValue(parsing: output.stdout))?["boards"]?.arrayValue ?? []
            return condition(last)
        }
        return last
    }

    @Test(arguments: Lane.enabled)
    func boardsTableTellsWhatTheBoardsHaveAndWhatWasAskedFor(lane: Lane) async throws {
        try await RunningDaemon.with(lane: lane, boards: 3) { testbed, daemon in
            try await Self.waitForReadyBoards(3, socket: daemon.socket, lane: lane)
            let off = try await Blectl.run(["--socket", daemon.socket, "led", "off", "--all"])
            #expect(off.status == 0, "\(off)")
            try await testbed.run(["board", "drop", "nano-02"])
            let on = try await Blectl.run(["--socket", daemon.socket, "led", "on", "--all"])
            #expect(on.status == 1, "nano-02 is off: \(on)")
            // nano-02 has not got the LED on (nothing written since it went), the others have.
            let table = try await Blectl.run(["--socket", daemon.socket, "boards"])
            let row = try #require(table.stdout.split(separator: "\n").first { $0.hasPrefix("nano-02") })
            #expect(row.contains("on (pending)"), "\(table)")
            let json = try await Blectl.run(["--socket", daemon.socket, "--json", "boards"])
            let boards = try #require(try JSONValue(parsing: json.stdout)["boards"]?.arrayValue)
            for board in boards {
                let dropped = board["name"]?.stringValue == "nano-02"
                #expect(board["desiredLed"]?.boolValue == true)
                #expect(dropped ? board["led"] == .null : board["led"]?.boolValue == true, "\(board)")
            }
            #expect(try await testbed.state().first { $0.name == "nano-02" }?.led != 1)
            // Back on: the daemon writes the wish, and the table converges to the truth.
            try await testbed.run(["board", "restore", "nano-02"])
            _ = try await Self.waitForBoards(socket: daemon.socket, lane: lane, "nano-02 with its LED on") {
                $0.contains { $0["name"]?.stringValue == "nano-02" && $0["led"]?.boolValue == true }
            }
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
            let after = try await Blectl.run(["--socket", daemon.socket, "boards"])
            #expect(!after.stdout.contains("pending") && !after.stdout.contains("→"), "\(after)")
        }
    }

    @Test(arguments: Lane.enabled)
    func aBoardIdentifiedBlinksThenHasItsLEDAsWantedAndTheNewOnesAreNamedInTurn(lane: Lane) async throws {
        try await RunningDaemon.with(lane: lane, boards: 3) { testbed, daemon in
            try await Self.waitForReadyBoards(3, socket: daemon.socket, lane: lane)
            let on = try await Blectl.run(["--socket", daemon.socket, "led", "on", "nano-02"])
            #expect(on.status == 0, "\(on)")
            let writes = try #require(try await testbed.state().first { $0.name == "nano-02" }?.ledWrites)
            // Watched on the boards themselves while blectl identify runs.
            let watch = Task {
                var seen: [Int?] = []
                while !Task.isCancelled {
                    let led = try? await testbed.state().first { $0.name == "nano-02" }?.led
                    if let led, seen.last != led { seen.append(led) }
                }
                return seen
            }
            let identified = try await Blectl.run(["--socket", daemon.socket, "identify", "nano-02"])
            watch.cancel()
            let seen = await watch.value
            #expect(identified.status == 0, "\(identified)")
            #expect(identified.stdout.contains("1/1 board identified"), "\(identified)")
            // Six blinks (12 writes) and the LED put back: the board's own count of writes.
            let written = try #require(try await testbed.state().first { $0.name == "nano-02" }?.ledWrites) - writes
            #expect(written == 13, "\(written) LED writes")
            #expect(seen.count >= 3, "it blinked: the LED went off and on again, seen \(seen)")
            #expect(try await testbed.state().first { $0.name == "nano-02" }?.led == 1, "on again, as wanted")
            #expect(try await testbed.state().filter { $0.name != "nano-02" }.allSatisfy { $0.led != 1 }, "the others left alone")
            // A new set: every board unnamed; named in turn, it leaves the list.
            func new() async throws -> [String] {
                let json = try await Blectl.run(["--socket", daemon.socket, "--json", "boards", "--new"])
                return try #require(try JSONValue(parsing: json.stdout)["boards"]?.arrayValue).compactMap { $0["name"]?.stringValue }
            }
            #expect(try await new() == ["nano-01", "nano-02", "nano-03"])
            let address = try #require(try await testbed.state().first { $0.name == "nano-02" }?.address)
            let alias = try await Blectl.run(["--socket", daemon.socket, "alias", address, "bench-4"])
            #expect(alias.status == 0, "\(alias)")
            #expect(try await new() == ["nano-01", "nano-03"])
            let table = try await Blectl.run(["--socket", daemon.socket, "boards", "--new"])
            #expect(!table.stdout.contains("bench-4") && table.stdout.contains("2 boards"), "\(table)")
        }
    }

    @Test func fixedMethodAndParameterNamesOverRawJSONRPC() async throws {
        try await RunningDaemon.with(boards: 3) { testbed, daemon in
            try await Self.waitForReadyBoards(3, socket: daemon.socket)
            let set = try await Blectl.run([
                "--socket", daemon.socket, "rpc", "led.set", #"{"select": ["nano-0*"], "on": true, "timeoutMs": 4000}"#,
            ])
            #expect(set.status == 0, "\(set)")
            let reply = try JSONValue(parsing: set.stdout)
            let result = reply["result"] ?? reply
            #expect(result["totals"]?["ok"]?.int64Value == 3, "\(set)")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })

            let list = try await Blectl.run(["--socket", daemon.socket, "rpc", "boards.list", #"{"select": "all"}"#])
            let boards = (try JSONValue(parsing: list.stdout))
            let entries = (boards["result"] ?? boards)["boards"]?.arrayValue ?? []
            #expect(entries.count == 3)
            #expect(entries.allSatisfy { $0["state"]?.stringValue == "ready" && $0["name"]?.stringValue?.hasPrefix("nano-") == true })

            let read = try await Blectl.run([
                "--socket", daemon.socket, "rpc", "temperature.read", #"{"select": "all", "maxAgeMs": 0}"#,
            ])
            let readings = (try JSONValue(parsing: read.stdout))
            let results = (readings["result"] ?? readings)["results"]?.arrayValue ?? []
            #expect(results.count == 3 && results.allSatisfy { $0["celsius"]?.int64Value == 21 && $0["address"] != nil })

            let unknown = try await Blectl.run(["--socket", daemon.socket, "led", "on", "lab-*"])
            #expect(unknown.status == 1, "\(unknown)")
            #expect(unknown.stderr.contains("lab-*"), "\(unknown)")

            // The daemon serves the catalogue, every method of it with a handler, as described.
            let discover = try await Blectl.run(["--socket", daemon.socket, "--json", "rpc", "rpc.discover"])
            let document = try JSONValue(parsing: discover.stdout)
            let served = Dictionary(
                ((document["result"] ?? document)["methods"]?.arrayValue ?? []).compactMap { method in method["name"]?.stringValue.map { ($0, method) } },
                uniquingKeysWith: { first, _ in first })
            #expect(Set(served.keys) == Set(FleetMethods.descriptors.map(\.name)))
            let described = OpenRPCDocument.make(methods: FleetMethods.descriptors, title: "blefleet", apiVersion: BlefleetVersion.current)
            // As JSON (300.0 is read back as 300).
            for method in try JSONValue(parsing: described.serialized())["methods"]?.arrayValue ?? [] {
                let name = method["name"]?.stringValue ?? ""
                #expect(served[name] == method, "\(name): the daemon publishes other than its description says")
            }
        }
    }

    @Test(arguments: Lane.enabled)
    func gattNotifyFollowsABoardAcrossAReconnectAndLeavesTheDaemonsOwnSessionAlone(lane: Lane) async throws {
        try await RunningDaemon.with(lane: lane, boards: 2, testbedArguments: ["--notify-interval", "0.2"]) {
            testbed, daemon in
            try await Self.waitForReadyBoards(2, socket: daemon.socket, lane: lane)
            try await testbed.run(["board", "temp", "nano-01", "5"])
            // A client follows nano-01's temperature characteristic (the one the daemon
            // itself subscribes to) for 15 values; the board drops and comes back meanwhile.
            let (follower, lines) = try Blectl.start([
                "--socket", daemon.socket, "--json", "gatt", "notify", "nano-01", "--count", "15",
                "--service", "d888a9c2-f3cc-11ed-a05b-0242ac120003",
                "--characteristic", "d888a9c3-f3cc-11ed-a05b-0242ac120003",
            ])
            defer { follower.signal(SIGKILL) }
            var values: [String?] = []
            var received = lines.makeAsyncIterator()
            if let first = await received.next() { values.append(try JSONValue(parsing: Array(first.utf8))["value"]?.stringValue) }
            try await testbed.run(["board", "drop", "nano-01"])
            try await testbed.run(["board", "restore", "nano-01"])
            try await testbed.run(["board", "temp", "nano-01", "-3"])
            while let line = await received.next() {
                values.append(try JSONValue(parsing: Array(line.utf8))["value"]?.stringValue)
            }
            #expect(await follower.exit(timeout: lane.allowing(.seconds(10))) == 0)
            #expect(values.count == 15)
            #expect(values.first == "05", "no value before the drop: \(values)")
            #expect(values.contains("fd"), "no value after the reconnect (-3 is fd): \(values)")
            // The client's session ended; the daemon's own one goes on: a new temperature
            // reaches its cache (read with a long maximum age: only a notification updates it).
            try await testbed.run(["board", "temp", "nano-01", "7"])
            let deadline = ContinuousClock.now + lane.allowing(.seconds(5))
            var cached: Int64?
            while cached != 7, ContinuousClock.now < deadline {
                let read = try await Blectl.run([
                    "--socket", daemon.socket, "rpc", "temperature.read", #"{"select": ["nano-01"], "maxAgeMs": 600000}"#,
                ])
                let reply = try JSONValue(parsing: read.stdout)
                cached = (reply["result"] ?? reply)["results"]?.arrayValue?.first?["celsius"]?.int64Value
            }
            #expect(cached == 7, "the daemon's own notifications stopped when the client left")
        }
    }

    @Test func readyOnlyWhenServingWatchdogPingsAndStoppingOnSIGTERM() async throws {
        let notify = try NotifySocket()
        try await Testbed.with(boards: 2) { testbed in
            let daemon = try RunningDaemon(
                busAddress: testbed.busAddress,
                environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"])
            defer { daemon.terminate() }
            #expect(notify.wait(for: "READY=1", timeout: 15), "no READY=1; log:\n\(daemon.log)")
            // At the moment READY=1 arrives, the socket already accepts calls, and a call
            // sees BlueZ (the fleet is in step with it, not only the mirror).
            #expect(RunningDaemon.accepts(daemon.socket))
            let scan = try await Blectl.run(["--socket", daemon.socket, "scan", "--seconds", "0.1"])
            #expect(scan.status == 0, "\(scan)")
            let status = try await Blectl.run(["--socket", daemon.socket, "status"])
            #expect(status.status == 0, "\(status)")
            #expect(notify.received.contains { $0.contains("STATUS=") && $0.contains("adapter hci0 on") })
            // WATCHDOG_USEC 400 ms: a ping every 200 ms, so three within a second.
            let pings = notify.received.filter { $0.contains("WATCHDOG=1") }.count
            #expect(notify.wait(for: "WATCHDOG=1", count: pings + 3, timeout: 1), "expected pings every 200 ms")

            #expect(daemon.terminate() == 0, "log:\n\(daemon.log)")
            #expect(notify.wait(for: "STOPPING=1", timeout: 1))
            #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket file was left behind")
            // Boards were disconnected on the way out.
            #expect(try await testbed.state().allSatisfy { !$0.notifying })
        }
    }

    @Test func socketActivationServesOnThePassedSocket() async throws {
        try await Testbed.with(boards: 2) { testbed in
            let directory = try makeTemporaryDirectory(prefix: "activate")
            defer { try? FileManager.default.removeItem(at: directory) }
            let socket = directory.appendingPathComponent("activated.sock").path
            let daemon = try RunningDaemon(
                busAddress: testbed.busAddress, launcher: ["/usr/bin/systemd-socket-activate", "-l", socket])
            defer { daemon.terminate() }
            // systemd-socket-activate listens at once and starts the daemon on the first connection.
            try await Self.waitForReadyBoards(2, socket: socket)
            let led = try await Blectl.run(["--socket", socket, "led", "on", "--all"])
            #expect(led.status == 0, "\(led)")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
            #expect(daemon.log.contains("using the socket passed by systemd"), "\(daemon.log)")
            #expect(!FileManager.default.fileExists(atPath: daemon.socket), "it also bound its own socket")
        }
    }

    @Test func badConfigurationExitsWith78NamingTheKey() async throws {
        try await Testbed.with(boards: 1) { testbed in
            let daemon = try RunningDaemon(busAddress: testbed.busAddress, configuration: "connection-limit: lots\n")
            #expect(await daemon.process.exit(timeout: .seconds(15)) == 78)
            #expect(daemon.log.contains("connection-limit: got \"lots\"; allowed: a whole number from 1 to 32"), "\(daemon.log)")
        }
    }

    @Test func unreachableBusExitsWith69() async throws {
        let daemon = try RunningDaemon(busAddress: "unix:path=/nonexistent/bus")
        #expect(await daemon.process.exit(timeout: .seconds(15)) == 69)
        #expect(daemon.log.contains("cannot connect to unix:path=/nonexistent/bus"), "\(daemon.log)")
    }

    @Test func strangersAreRefusedAndGroupMembersServed() async throws {
        let suffix = String(UUID().uuidString.prefix(6)).lowercased()
        let group = "bfg\(suffix)"
        let member = "bfm\(suffix)"
        _ = try runCommand("/usr/sbin/groupadd", [group])
        defer { _ = try? runCommand("/usr/sbin/groupdel", [group]) }
        _ = try runCommand("/usr/sbin/useradd", ["-M", "-N", "-g", "nogroup", "-G", group, member])
        defer { _ = try? runCommand("/usr/sbin/userdel", [member]) }
        try await RunningDaemon.with(boards: 2, configuration: "socket-group: \(group)\n") { testbed, daemon in
            try await Self.waitForReadyBoards(2, socket: daemon.socket)
            let stranger = try await Blectl.run(
                ["--socket", daemon.socket, "led", "on", "--all"],
                prefix: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
            #expect(stranger.status == 77, "\(stranger)")
            #expect(stranger.stderr.contains("blefleet") || stranger.stderr.contains("group"), "\(stranger)")
            #expect(try await testbed.state().allSatisfy { $0.led == nil })

            let allowed = try await Blectl.run(
                ["--socket", daemon.socket, "led", "on", "--all"],
                prefix: ["/usr/bin/setpriv", "--reuid=\(member)", "--regid=nogroup", "--init-groups"])
            #expect(allowed.status == 0, "\(allowed)")
            #expect(try await testbed.state().allSatisfy { $0.led == 1 })
            #expect(daemon.log.contains("rpc.method=led.set"), "state-changing calls are logged")
        }
    }
}

extension BlefleetdEndToEndTests {
    @Test func twoHundredFiftySixClientsAtOnceAreAllAnsweredWithoutLeaks() async throws {
        try await RunningDaemon.with(boards: 5) { testbed, daemon in
            try await Self.waitForReadyBoards(5, socket: daemon.socket)
            let fdDirectory = "/proc/\(daemon.process.pid)/fd"
            let fdsBefore = try FileManager.default.contentsOfDirectory(atPath: fdDirectory).count
            let socket = daemon.socket
            let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<256 {
                    group.addTask {
                        let client = try FleetRPCClient(socketPath: socket)
                        defer { client.close() }
                        let reply: JSONValue =
                            index % 4 == 0
                            ? try await client.call("led.set", params: ["select": "all", "on": .bool(index % 8 == 0)])
                            : try await client.call("temperature.read", params: ["select": "all"])
                        return reply["totals"]?["ok"]?.int64Value == 5
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(answered == 256)
            // Once the clients are gone, the daemon holds no more descriptors than before.
            var fdsAfter = 0
            try? await eventually("the daemon is back to \(fdsBefore) descriptors", every: .milliseconds(100)) {
                fdsAfter = try FileManager.default.contentsOfDirectory(atPath: fdDirectory).count
                return fdsAfter <= fdsBefore
            }
            #expect(fdsAfter <= fdsBefore, "descriptors before \(fdsBefore), after \(fdsAfter)")
            #expect(try await testbed.state().allSatisfy { $0.present })
        }
    }

    /// The daemon's own log entries in a real systemd-journald, run in private user, mount and
    /// PID namespaces (a tmpfs over /run; the host journal is never touched).
    @Test func journaldEntriesCarryStructuredFields() async throws {
        let script = #"""
            set -eu
            journal="$1"; daemon="$2"; blectl="$3"; bus="$4"; work="$5"
            mount -t tmpfs tmpfs /run
            if [ ! -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log; mkdir /var/log/journal; fi
            mount --bind "$journal" /var/log/journal
            mkdir -p /run/systemd/journal /run/log
            /lib/systemd/systemd-journald &
            i=0
            until [ -S /run/systemd/journal/socket ]; do i=$((i + 1)); [ $i -le 500 ] || exit 3; sleep 0.02; done
            "$daemon" --config "$work/conf" --socket "$work/s.sock" --state-dir "$work/state" --bus "$bus" \
                --log-target journal &
            d=$!
            i=0
            until "$blectl" --socket "$work/s.sock" led on --all >/dev/null 2>&1; do
                i=$((i + 1)); [ $i -le 150 ] || exit 4; sleep 0.1
            done
            kill -TERM $d
            wait $d
            journalctl --flush
            """#
        try await Testbed.with(boards: 2) { testbed in
            let work = try makeTemporaryDirectory(prefix: "journal-work")
            let journal = try makeTemporaryDirectory(prefix: "journal")
            defer {
                try? FileManager.default.removeItem(at: work)
                try? FileManager.default.removeItem(at: journal)
            }
            try "socket-group: root\n".write(to: work.appendingPathComponent("conf"), atomically: true, encoding: .utf8)
            let run = try await ChildProcess.run(
                "/usr/bin/unshare",
                ["-Urm", "--pid", "--fork", "--kill-child", "--mount-proc", "/bin/sh", "-c", script, "sh",
                 journal.path, try RunningDaemon.binary(), try Blectl.path(), testbed.busAddress, work.path],
                timeout: 60)
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            let json = try runCommand("/usr/bin/journalctl", ["-D", journal.path, "-o", "json", "--all", "--no-pager"])
            let entries = json.split(separator: "\n").compactMap { try? JSONValue(parsing: String($0)) }
            let ours = entries.filter { $0["SYSLOG_IDENTIFIER"]?.stringValue == "blefleetd" }
            #expect(!ours.isEmpty, "no blefleetd entries among \(entries.count)")
            let call = ours.first { $0["RPC_METHOD"]?.stringValue == "led.set" }
            #expect(call?["CLIENT_UID"]?.stringValue == "0")
            #expect(call?["PRIORITY"]?.stringValue == "6")
            #expect(call?["CODE_FILE"]?.stringValue?.hasSuffix(".swift") == true)
            #expect(call?["CODE_LINE"] != nil && call?["CODE_FUNC"] != nil)
            let ready = ours.filter { $0["MESSAGE"]?.stringValue == "board ready" }
            #expect(Set(ready.compactMap { $0["BLE_ADDRESS"]?.stringValue }) == ["CA:FE:00:00:00:01", "CA:FE:00:00:00:02"])
        }
    }
}

extension BlefleetdEndToEndTests {
    @Test func sighupReloadsWhatItCanAndKeepsServing() async throws {
        try await RunningDaemon.with(boards: 1) { _, daemon in
            try await Self.waitForReadyBoards(1, socket: daemon.socket)
            let config = daemon.directory.appendingPathComponent("blefleetd.conf")
            /// Rewrites the file, sends SIGHUP, and waits for a new log line ending with `message`.
            func reload(_ text: String, expecting message: String) async throws {
                let matching = { daemon.log.split(separator: "\n").count { $0.hasSuffix(message) } }
                let before = matching()
                try text.write(to: config, atomically: true, encoding: .utf8)
                daemon.process.signal(SIGHUP)
                try? await eventually("a new line ending with \"\(message)\"", every: .milliseconds(50)) { matching() != before }
                #expect(matching() == before + 1, "no new line ending with \"\(message)\":\n\(daemon.log)")
            }
            try await reload(
                "socket-group: root\nconnection-limit: lots\n",
                expecting: "connection-limit: got \"lots\"; allowed: a whole number from 1 to 32 (per adapter), or a mapping like {default: 5, hci1: 3}")
            try await reload(
                "socket-group: root\ndefault-timeout-ms: 2000\nconnection-limit: 3\n",
                expecting: "these settings take effect at the next restart: connection-limit")
            try await reload("socket-group: root\ndefault-timeout-ms: 3000\n", expecting: "configuration reloaded")
            #expect(daemon.process.isRunning)
            let led = try await Blectl.run(["--socket", daemon.socket, "led", "on", "--all"])
            #expect(led.status == 0, "\(led)")
            // The log level follows the file too: debug lines appear from now on.
            #expect(!daemon.log.contains("Client connected"))
            try await reload("socket-group: root\ndefault-timeout-ms: 3000\nlog-level: debug\n", expecting: "log level is now debug")
            let status = try await Blectl.run(["--socket", daemon.socket, "status"])
            #expect(status.status == 0, "\(status)")
            try? await eventually("a debug line", within: .seconds(5), every: .milliseconds(50)) { daemon.log.contains("Client connected") }
            #expect(daemon.log.contains("Client connected"), "no debug line after the reload:\n\(daemon.log)")
        }
    }
}
