import FleetRPC
@testable import FleetRPCServer
import Foundation
import Testing
import TestSupport

extension SocketTests {
    /// Real peer credentials: clients run as other users with `setpriv` and talk through `socat`.
    @Suite struct AccessPolicyTests {
        /// A temporary control group, read-only group and one member of each; always removed.
        struct TemporaryAccounts {
            let suffix = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
            var controlGroup: String { "bfc-\(suffix)" }
            var readOnlyGroup: String { "bfr-\(suffix)" }
            var controlUser: String { "bfcu-\(suffix)" }
            var readOnlyUser: String { "bfru-\(suffix)" }

            func create() throws {
                _ = try runCommand("/usr/sbin/groupadd", [controlGroup])
                _ = try runCommand("/usr/sbin/groupadd", [readOnlyGroup])
                _ = try runCommand("/usr/sbin/useradd", ["-M", "-N", "-g", "nogroup", "-G", controlGroup, "-s", "/usr/sbin/nologin", controlUser])
                _ = try runCommand("/usr/sbin/useradd", ["-M", "-N", "-g", "nogroup", "-G", readOnlyGroup, "-s", "/usr/sbin/nologin", readOnlyUser])
            }

            func remove() {
                _ = try? runCommand("/usr/sbin/userdel", [controlUser])
                _ = try? runCommand("/usr/sbin/userdel", [readOnlyUser])
                _ = try? runCommand("/usr/sbin/groupdel", [controlGroup])
                _ = try? runCommand("/usr/sbin/groupdel", [readOnlyGroup])
            }

            func uid(_ user: String) throws -> String {
                try runCommand("/usr/bin/id", ["-u", user]).trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }

        /// Sends one line through socat run as `uid` (with `groups`) and returns the reply line.
        /// (ChildProcess and a shell pipe, not Foundation's Process: that one, at high
        /// concurrency, can close a pipe's descriptor twice, swiftlang/swift#57827.)
        func call(path: String, setprivArguments: [String], _ frame: String) async throws -> String {
            let command = "printf '%s\\n' \"$FRAME\" | exec /usr/bin/setpriv \"$@\" /usr/bin/socat -t 5 - \"UNIX-CONNECT:$SOCKET\""
            var environment = ProcessInfo.processInfo.environment
            environment["FRAME"] = frame
            environment["SOCKET"] = path
            let result = try await ChildProcess.run("/bin/sh", ["-c", command, "sh"] + setprivArguments, environment: environment)
            let text = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            guard result.status == 0, !text.isEmpty else {
                throw TestFailure("socat exited \(result.status): \(result.stderr)")
            }
            return text
        }

        @Test func nobodyIsRefusedAndGroupMembersGetTheirRights() async throws {
            let accounts = TemporaryAccounts()
            defer { accounts.remove() }
            try accounts.create()
            let controlUID = try accounts.uid(accounts.controlUser)
            let readOnlyUID = try accounts.uid(accounts.readOnlyUser)
            let capture = LogCapture()
            let policy = AccessPolicy(
                configuration: .init(controlGroup: accounts.controlGroup, readOnlyGroup: accounts.readOnlyGroup))
            let dispatcher = TestCatalogue.makeDispatcher(policy: policy, logger: capture.logger)
            let read = #"{"jsonrpc":"2.0","method":"test.get_data","id":1}"#
            let write = #"{"jsonrpc":"2.0","method":"test.update","id":2}"#

            try await withServer(dispatcher: dispatcher, logger: capture.logger) { path, _ in
                let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"]
                let refused = try parse(try await call(path: path, setprivArguments: nobody, read))
                #expect(refused["error"]?["code"] == -32000)
                // Refused as it connects, before its call is read: one line, then closed.
                #expect(refused["id"] == .null)
                #expect(
                    refused["error"]?["message"]?.stringValue
                        == "Permission denied: uid 65534 may not use blefleetd; join the group '\(accounts.controlGroup)' "
                        + "(or '\(accounts.readOnlyGroup)' to read only); the connection is closed.")

                let control = ["--reuid=\(controlUID)", "--regid=65534", "--init-groups"]
                #expect(try parse(try await call(path: path, setprivArguments: control, write))["result"] == true)
                #expect(try parse(try await call(path: path, setprivArguments: control, read))["result"] == ["hello", 5])

                let readOnly = ["--reuid=\(readOnlyUID)", "--regid=65534", "--init-groups"]
                #expect(try parse(try await call(path: path, setprivArguments: readOnly, read))["result"] == ["hello", 5])
                let denied = try parse(try await call(path: path, setprivArguments: readOnly, write))
                #expect(denied["error"]?["code"] == -32000)
                #expect(denied["error"]?["message"]?.stringValue?.contains("join the group '\(accounts.controlGroup)'") == true)
            }
            let refusals = capture.all.filter { $0.message.contains("Refused") }
            #expect(refusals.contains { $0.metadata["client.uid"] == "65534" && $0.message == "Refused a connection: its user has no role" })
            #expect(refusals.contains { $0.metadata["client.uid"] == readOnlyUID && $0.metadata["rpc.method"] == "test.update" })
            #expect(refusals.allSatisfy { Int($0.metadata["client.pid"] ?? "") ?? 0 > 0 })
            #expect(capture.all.contains { $0.message.contains("State-changing") && $0.metadata["client.uid"] == controlUID })
        }

        /// systemd's `DynamicUser=yes` makes a uid up for a unit: no passwd entry, no group in
        /// NSS; its `SupplementaryGroups=` are the process's own groups. The kernel tells them
        /// (`SO_PEERGROUPS`), so such a service is who its groups say (issue 36: every call of
        /// the packaged web and MQTT units was refused).
        @Test func aUserWithNoPasswdEntryIsWhoItsProcessGroupsSay() async throws {
            let accounts = TemporaryAccounts()
            defer { accounts.remove() }
            try accounts.create()
            func gid(_ group: String) throws -> String {
                let line = try runCommand("/usr/bin/getent", ["group", group])
                return String(line.split(separator: ":")[2])
            }
            var uid: UInt32 = 61_234
            while getpwuid(uid) != nil { uid += 1 }
            let policy = AccessPolicy(
                configuration: .init(controlGroup: accounts.controlGroup, readOnlyGroup: accounts.readOnlyGroup))
            let read = #"{"jsonrpc":"2.0","method":"test.get_data","id":1}"#
            let write = #"{"jsonrpc":"2.0","method":"test.update","id":2}"#
            try await withServer(dispatcher: TestCatalogue.makeDispatcher(policy: policy)) { path, _ in
                let control = ["--reuid=\(uid)", "--regid=\(uid)", "--groups=\(try gid(accounts.controlGroup))"]
                #expect(try parse(try await call(path: path, setprivArguments: control, write))["result"] == true)
                let readOnly = ["--reuid=\(uid)", "--regid=\(uid)", "--groups=\(try gid(accounts.readOnlyGroup)),65534"]
                #expect(try parse(try await call(path: path, setprivArguments: readOnly, read))["result"] == ["hello", 5])
                let denied = try parse(try await call(path: path, setprivArguments: readOnly, write))
                #expect(denied["error"]?["code"] == -32000, "\(denied)")
                let none = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"]
                #expect(try parse(try await call(path: path, setprivArguments: none, read))["error"]?["code"] == -32000)
            }
        }

        /// A client (python as another user) that opens `connections` connections at once,
        /// sends `frame` on each and prints, per connection, its first line and whether the
        /// daemon then closed it within 3 s ("closed") or kept it ("open").
        static let holder = """
            import socket, sys
            path, count, frame = sys.argv[1], int(sys.argv[2]), sys.argv[3]
            held = []
            for _ in range(count):
                s = socket.socket(socket.AF_UNIX); s.connect(path); held.append(s)
            for s in held:
                try:
                    s.sendall(frame.encode() + b"\\n")
                except OSError:
                    pass  # already closed by the daemon (its answer waits to be read)
            for s in held:
                s.settimeout(1.5)
                data = b""
                try:
                    while not data.endswith(b"\\n"):
                        chunk = s.recv(65536)
                        if not chunk: break
                        data += chunk
                    rest = s.recv(1)
                    state = "closed" if rest == b"" else "open"
                except socket.timeout:
                    state = "open"
                print(data.decode().strip() + " " + state)
            """

        static func isBusy(_ line: String) -> Bool { line.contains(#""code":-32004"#) }

        func hold(path: String, uid: String, groups: [String], connections: Int, _ frame: String) async throws -> [String] {
            let groupArguments = groups.isEmpty ? ["--clear-groups"] : ["--groups=\(groups.joined(separator: ","))"]
            let result = try await ChildProcess.run(
                "/usr/bin/setpriv",
                ["--reuid=\(uid)", "--regid=65534"] + groupArguments
                    + ["/usr/bin/python3", "-I", "-c", Self.holder, path, String(connections), frame])
            guard result.status == 0 else { throw TestFailure("the holder exited \(result.status): \(result.stderr)") }
            return result.stdout.split(separator: "\n").map(String.init)
        }

        /// One user holds at most `max-connections-per-user`; one more is told so and closed;
        /// root is never held back. A user with no role is told why once and closed.
        @Test func connectionsAreCappedPerUserAndARefusedPeerIsClosed() async throws {
            let accounts = TemporaryAccounts()
            defer { accounts.remove() }
            try accounts.create()
            let controlUID = try accounts.uid(accounts.controlUser)
            let controlGID = String(try runCommand("/usr/bin/getent", ["group", accounts.controlGroup]).split(separator: ":")[2])
            let capture = LogCapture()
            let policy = AccessPolicy(
                configuration: .init(controlGroup: accounts.controlGroup, readOnlyGroup: accounts.readOnlyGroup))
            let status = #"{"jsonrpc":"2.0","method":"test.get_data","id":1}"#
            try await withServer(
                dispatcher: TestCatalogue.makeDispatcher(policy: policy, logger: capture.logger),
                configure: { $0.maxConnectionsPerUser = 3 }, logger: capture.logger
            ) { path, _ in
                let lines = try await hold(path: path, uid: controlUID, groups: [controlGID], connections: 4, status)
                #expect(lines.filter { $0.contains(#""result":["hello",5]"#) && $0.hasSuffix(" open") }.count == 3, "\(lines)")
                let refused = lines.filter(Self.isBusy)
                #expect(refused.count == 1 && refused.allSatisfy { $0.contains("has 3 connections to blefleetd open") && $0.hasSuffix(" closed") }, "\(lines)")
                // A stranger's every connection is answered its refusal, then closed.
                let stranger = try await hold(path: path, uid: "65534", groups: [], connections: 2, status)
                #expect(stranger.count == 2 && stranger.allSatisfy { $0.contains(#""code":-32000"#) && $0.hasSuffix(" closed") }, "\(stranger)")
            }
            // Refusals of one user: one line (a minute), however many.
            let refusals = capture.all.filter { $0.message.contains("Refused a connection") && $0.metadata["client.uid"] == "65534" }
            #expect(refusals.count == 1, "\(refusals.map(\.message))")
        }

        /// A peer with no role is told so as it connects, and closed, though it sends nothing.
        @Test func aSilentPeerWithNoRoleIsRefusedAsItConnects() async throws {
            let accounts = TemporaryAccounts()
            defer { accounts.remove() }
            try accounts.create()
            let policy = AccessPolicy(
                configuration: .init(controlGroup: accounts.controlGroup, readOnlyGroup: accounts.readOnlyGroup))
            let silent = """
                import socket, sys
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5)
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
                print(data.decode().strip())
                """
            try await withServer(dispatcher: TestCatalogue.makeDispatcher(policy: policy)) { path, server in
                let result = try await ChildProcess.run(
                    "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-I", "-c", silent, path])
                #expect(result.status == 0, "\(result.stderr)")
                let refusal = try parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
                #expect(refusal["error"]?["code"] == -32000)
                #expect(refusal["error"]?["message"]?.stringValue?.hasPrefix("Permission denied: uid 65534 may not use blefleetd") == true)
                try await eventually("the stranger's connection is gone") { server.connectionCount == 0 }
            }
        }

        /// Calls in flight are capped per user across its connections; read-only callers leave
        /// the reserve to control users, whose calls still run.
        @Test func callsAreCappedPerUserAndReadersLeaveTheReserveToControlUsers() async throws {
            let accounts = TemporaryAccounts()
            defer { accounts.remove() }
            try accounts.create()
            let controlUID = try accounts.uid(accounts.controlUser)
            let readOnlyUID = try accounts.uid(accounts.readOnlyUser)
            func gid(_ group: String) throws -> String {
                String(try runCommand("/usr/bin/getent", ["group", group]).split(separator: ":")[2])
            }
            let gate = Gate()
            let policy = AccessPolicy(
                configuration: .init(controlGroup: accounts.controlGroup, readOnlyGroup: accounts.readOnlyGroup))
            @Sendable func wait(_ key: String) -> String { #"{"jsonrpc":"2.0","method":"test.wait","params":{"key":"\#(key)"},"id":1}"# }
            try await withServer(
                dispatcher: TestCatalogue.makeServerDispatcher(gate: gate, policy: policy),
                configure: {
                    $0.maxCallsInFlightPerUser = 2
                    $0.maxCallsInFlight = 6
                    $0.reservedControlCalls = 3
                }
            ) { path, server in
                // Three connections of one control user, a waiting call each: the third is busy.
                let control = try await hold(
                    path: path, uid: controlUID, groups: [try gid(accounts.controlGroup)], connections: 3, wait("k1"))
                let perUser = control.filter(Self.isBusy)
                #expect(perUser.count == 1, "\(control)")
                #expect(perUser.allSatisfy { $0.contains("uid \(controlUID) has 2 calls in flight on its connections") }, "\(control)")
                // Its two calls still run (a call answers even when its client has gone). The
                // readers' share is 6 - 3: one reader's call runs, the next is refused.
                #expect(server.callsInFlight == 2)
                let readers = try await hold(
                    path: path, uid: readOnlyUID, groups: [try gid(accounts.readOnlyGroup)], connections: 2, wait("k2"))
                #expect(readers.filter(Self.isBusy).count == 1, "\(readers)")
                #expect(readers.filter(Self.isBusy).allSatisfy { $0.contains("reserved-control-calls") }, "\(readers)")
                #expect(server.callsInFlight == 3)
                // The teacher (root) is still served from the reserve.
                let teacher = try await offPool {
                    let client = try UnixSocketClient(path: path)
                    try client.send(#"{"jsonrpc":"2.0","method":"test.get_data","id":7}"# + "\n")
                    return try parse(try client.readLine())
                }
                #expect(teacher["result"] == ["hello", 5])
                gate.open("k1")
                gate.open("k2")
                try await eventually("every call answered") { server.callsInFlight == 0 }
            }
        }

        /// All users together hold at most `max-connections`; one more is told so and closed.
        @Test func connectionsAreCappedForEveryoneTogether() async throws {
            let accounts = TemporaryAccounts()
            defer { accounts.remove() }
            try accounts.create()
            let controlUID = try accounts.uid(accounts.controlUser)
            let controlGID = String(try runCommand("/usr/bin/getent", ["group", accounts.controlGroup]).split(separator: ":")[2])
            let policy = AccessPolicy(
                configuration: .init(controlGroup: accounts.controlGroup, readOnlyGroup: accounts.readOnlyGroup))
            let status = #"{"jsonrpc":"2.0","method":"test.get_data","id":1}"#
            try await withServer(
                dispatcher: TestCatalogue.makeDispatcher(policy: policy), configure: { $0.maxConnections = 3 }
            ) { path, _ in
                let lines = try await hold(path: path, uid: controlUID, groups: [controlGID], connections: 4, status)
                #expect(lines.filter { $0.contains(#""result":["hello",5]"#) }.count == 3, "\(lines)")
                let refused = lines.filter(Self.isBusy)
                #expect(
                    refused.count == 1
                        && refused.allSatisfy {
                            $0.contains("blefleetd has 3 connections open, the most it keeps (max-connections)") && $0.hasSuffix(" closed")
                        }, "\(lines)")
            }
        }

        /// A user removed from the control group loses control within the cache's lifetime,
        /// though the groups its process connected with still name the group: for a uid NSS
        /// knows, only NSS's groups count (issue 50).
        @Test func aUserRemovedFromTheGroupLosesControlThoughItsProcessStillHasTheGroup() throws {
            let accounts = TemporaryAccounts()
            defer { accounts.remove() }
            try accounts.create()
            let uid = try #require(UInt32(try accounts.uid(accounts.controlUser)))
            let controlGID = try #require(
                UInt32(String(try runCommand("/usr/bin/getent", ["group", accounts.controlGroup]).split(separator: ":")[2])))
            let policy = AccessPolicy(
                configuration: .init(
                    controlGroup: accounts.controlGroup, readOnlyGroup: accounts.readOnlyGroup, cacheLifetime: .milliseconds(1)))
            let connected = PeerCredentials(pid: 1, uid: uid, gid: controlGID, groups: [controlGID])
            #expect(policy.role(for: connected) == .control)
            _ = try runCommand("/usr/bin/gpasswd", ["-d", accounts.controlUser, accounts.controlGroup])
            let expired = ContinuousClock.now.advanced(by: .milliseconds(2))
            while ContinuousClock.now < expired {}
            #expect(policy.role(for: connected) == .none)
        }

        /// The groups `SO_PEERGROUPS` wrote into a zeroed buffer: the kernel's sorted run.
        @Test func peerGroupsAreTheSortedRunAtTheFrontOfTheBuffer() {
            func groups(_ gids: [UInt32]) -> [UInt32] {
                var buffer = PeerGroups()
                for (index, gid) in gids.enumerated() { buffer.storage[index] = gid }
                return buffer.gids
            }
            #expect(groups([]) == [])
            #expect(groups([27, 100, 65534]) == [27, 100, 65534])
            #expect(groups([0, 4, 24]) == [0, 4, 24])
            #expect(groups([0]) == [], "a lone group 0 reads as none: it can only grant less")
            #expect(groups(Array(1...256).map(UInt32.init)).count == 256)
        }

        @Test func socketGroupDecidesWhoMayConnectAtAll() async throws {
            let accounts = TemporaryAccounts()
            defer { accounts.remove() }
            try accounts.create()
            let controlUID = try accounts.uid(accounts.controlUser)
            let policy = AccessPolicy(configuration: .init(controlGroup: accounts.controlGroup, readOnlyGroup: nil))
            try await withServer(
                dispatcher: TestCatalogue.makeDispatcher(policy: policy),
                configure: {
                    $0.socketMode = 0o660
                    $0.socketGroup = accounts.controlGroup
                }
            ) { path, _ in
                try FileManager.default.setAttributes(
                    [.posixPermissions: 0o755], ofItemAtPath: (path as NSString).deletingLastPathComponent)
                let frame = #"{"jsonrpc":"2.0","method":"test.get_data","id":1}"#
                let member = ["--reuid=\(controlUID)", "--regid=65534", "--init-groups"]
                #expect(try parse(try await call(path: path, setprivArguments: member, frame))["result"] == ["hello", 5])
                await #expect(throws: TestFailure.self) {
                    _ = try await call(path: path, setprivArguments: ["--reuid=65534", "--regid=65534", "--clear-groups"], frame)
                }
            }
        }
    }
}
