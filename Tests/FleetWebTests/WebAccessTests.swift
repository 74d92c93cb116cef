@testable import FleetWeb
import Foundation
import Hummingbird
import JSONRPC
import Logging
import NIOCore
import Synchronization
import Testing
import FleetRPC

@Suite("blefleet-web's --listen and --auth-file")
struct WebAccessTests {
    @Test("HOST:PORT and [IPv6]:PORT are read; anything else is refused with a sentence")
    func listenAddresses() throws {
        #expect(try ListenAddress(parsing: "127.0.0.1:8477") == ListenAddress(host: "127.0.0.1", port: 8477))
        #expect(try ListenAddress(parsing: "[::1]:9000") == ListenAddress(host: "::1", port: 9000))
        #expect(try ListenAddress(parsing: "0.0.0.0:80").description == "0.0.0.0:80")
        #expect(try ListenAddress(parsing: "[::]:80").description == "[::]:80")
        for bad in ["8477", ":8477", "localhost:", "localhost:http", "localhost:70000", "::1:8477", "[::1]8477"] {
            #expect(throws: WebConfigurationError.self, "\(bad)") { try ListenAddress(parsing: bad) }
        }
        do {
            _ = try ListenAddress(parsing: "localhost:0")
            Issue.record("port 0 accepted")
        } catch {
            #expect(error.description.contains("1 to 65535"))
        }
    }

    @Test("Loopback is 127.0.0.0/8, ::1 and names that resolve only to them")
    func loopback() {
        #expect(ListenAddress(host: "127.0.0.1", port: 1).isLoopback)
        #expect(ListenAddress(host: "127.3.2.1", port: 1).isLoopback)
        #expect(ListenAddress(host: "::1", port: 1).isLoopback)
        #expect(ListenAddress(host: "localhost", port: 1).isLoopback)
        #expect(!ListenAddress(host: "0.0.0.0", port: 1).isLoopback)
        #expect(!ListenAddress(host: "::", port: 1).isLoopback)
        #expect(!ListenAddress(host: "192.168.1.10", port: 1).isLoopback)
        #expect(!ListenAddress(host: "no-such-host.invalid", port: 1).isLoopback)
    }

    static let password = "classroom-101"
    static let hashes = [
        "yescrypt": "$y$j9T$mMZLM9fy2VypXzJpKqlvL0$2kat5uWN6B90T0xk2K8bxE5FvZTSgdFTLZOBRhWcbk.",
        "bcrypt": "$2y$12$wJDVkZKw7wLuTLyMzUxLGOBqx/uCBzamiQxMDckZyD2VDMq1wbQnS",
        "sha512": "$6$cpwG0mbQZH24bKct$vpXXSY/f4FJjoocVLbdPkkZr5w2NBCEROsgeq7UU0HjuBOYPy2pqTb25CRHzLFnwHAx8YLxbGa2fYcWDWX47A1",
    ]

    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    @Test("yescrypt, bcrypt (htpasswd -B) and SHA-512 hashes let their user in with the password, and only then")
    func passwords() throws {
        let text = "# users of the dashboard\n\n" + Self.hashes.map { "\($0.key):\($0.value)" }.joined(separator: "\n") + "\n"
        let file = try AuthFile(parsing: text, path: "users")
        #expect(file.userCount == 3)
        for user in Self.hashes.keys {
            #expect(file.verify(user: user, password: Self.password), "\(user)")
            #expect(!file.verify(user: user, password: Self.password + "x"), "\(user)")
            #expect(!file.verify(user: user, password: ""), "\(user)")
            #expect(file.accepts(authorization: Self.basic(user, Self.password)))
            #expect(!file.accepts(authorization: Self.basic(user, "wrong")))
        }
        #expect(!file.verify(user: "nobody", password: Self.password))
        #expect(!file.accepts(authorization: nil))
        #expect(!file.accepts(authorization: "Bearer abc"))
        #expect(!file.accepts(authorization: "Basic !!!"))
        // A header accepted once is accepted again (from memory) and a wrong one still is not.
        #expect(file.accepts(authorization: Self.basic("bcrypt", Self.password)))
        #expect(!file.accepts(authorization: Self.basic("bcrypt", Self.password + " ")))
    }

    @Test("A file blefleet-web cannot use is refused naming the line and saying how to make a good one")
    func badFiles() {
        func problem(_ text: String) -> String? {
            do {
                _ = try AuthFile(parsing: text, path: "users")
                return nil
            } catch {
                return error.description
            }
        }
        #expect(problem("")?.contains("no USER:HASH line") == true)
        #expect(problem("# only a comment\n")?.contains("no USER:HASH line") == true)
        #expect(problem("alice\n")?.contains("users line 1: expected USER:HASH") == true)
        #expect(problem("a:\(Self.hashes["bcrypt"]!)\na:\(Self.hashes["sha512"]!)")?.contains("line 2: the user a is already given") == true)
        // htpasswd's default (Apache MD5) is not crypt(3)'s; plain text is nothing.
        #expect(problem("\nbob:$apr1$x$abcdefghijklmnopqrstuv\n")?.contains("line 2: the hash of bob is not a crypt(3) hash") == true)
        #expect(problem("bob:secret\n")?.contains("htpasswd -nB bob") == true)
        // Old methods are refused, with what to use instead.
        #expect(problem("bob:$1$HxRB.5eu$dIrSRyfj20a8D3e34qxoH0\n")?.contains("mkpasswd -m yescrypt") == true)
    }

    @Test("A line's role is control (also without one, as before) or read-only; another word is refused")
    func roles() throws {
        let text = """
            teacher:\(Self.hashes["yescrypt"]!)
            lab:\(Self.hashes["bcrypt"]!):control
            pupil:\(Self.hashes["sha512"]!):read-only
            """
        let file = try AuthFile(parsing: text, path: "users")
        #expect(file.user(authorization: Self.basic("teacher", Self.password)) == WebUser(name: "teacher", role: .control))
        #expect(file.user(authorization: Self.basic("lab", Self.password)) == WebUser(name: "lab", role: .control))
        #expect(file.user(authorization: Self.basic("pupil", Self.password)) == WebUser(name: "pupil", role: .readOnly))
        // Remembered with its role.
        #expect(file.user(authorization: Self.basic("pupil", Self.password))?.role == .readOnly)
        #expect(file.user(authorization: Self.basic("pupil", "wrong")) == nil)
        do {
            _ = try AuthFile(parsing: "pupil:\(Self.hashes["sha512"]!):viewer\n", path: "users")
            Issue.record("the role viewer was accepted")
        } catch {
            #expect(error.description == "users line 1: the role of pupil is 'viewer'; it is control or read-only")
        }
        #expect(throws: WebConfigurationError.self) { try AuthFile(parsing: "a:b:c:d\n", path: "users") }
    }

    @Test("A file that cannot be read says so")
    func unreadable() {
        #expect(throws: WebConfigurationError.self) { try AuthFile(path: "/nonexistent/users") }
    }
}

@Suite("blefleet-web without passwords: this machine's names only")
struct LoopbackHostTests {
    @Test("A request is served under localhost, 127.0.0.0/8 and [::1] names only (no DNS rebinding)")
    func names() {
        func served(_ header: String) -> Bool {
            LoopbackHostOnly<BasicRequestContext>.isLoopbackHost(header)
        }
        for good in ["localhost:8477", "LOCALHOST", "127.0.0.1:8477", "127.1.2.3", "[::1]:8477", "app.localhost:80"] {
            #expect(served(good), "\(good)")
        }
        for bad in ["evil.example:8477", "127.0.0.1.evil.example", "10.0.0.1:8477", "[::2]:8477", "", "127.0.0.256", "localhost.evil.example"] {
            #expect(!served(bad), "\(bad)")
        }
    }
}

@Suite("blefleet-web without passwords: who is on the other end, as the kernel says")
struct LoopbackPeerTests {
    @Test("An address is written as /proc/net/tcp and tcp6 write it")
    func keys() throws {
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "127.0.0.1", port: 8477)) == "0100007F:211D")
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "10.1.2.3", port: 80)) == "0302010A:0050")
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "::1", port: 8477)) == "00000000000000000000000001000000:211D")
    }

    @Test("The uid of the line whose ends are the connection's, the other way round")
    func lookUp() throws {
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:211D 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 1 1 0
               1: 0100007F:9C40 0100007F:211D 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0
               2: 0100007F:211D 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   999        0 3 1 0
            """
        let client = try SocketAddress(ipAddress: "127.0.0.1", port: 40_000)
        let server = try SocketAddress(ipAddress: "127.0.0.1", port: 8477)
        #expect(LoopbackPeer.uid(remote: client, local: server, table: { $0 == "/proc/net/tcp" ? table : nil }) == 1000)
        #expect(LoopbackPeer.uid(remote: server, local: client, table: { _ in table }) == 999)
        let other = try SocketAddress(ipAddress: "127.0.0.1", port: 40_001)
        #expect(LoopbackPeer.uid(remote: other, local: server, table: { _ in table }) == nil)
    }

    @Test("A closed client's end is no one's: the kernel lists it as root's with no file (orphaned or TIME_WAIT)")
    func closedEndsAreNobodys() throws {
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:9C40 0100007F:211D 05 00000000:00000000 00:00000000 00000000     0        0 0 1 0
               1: 0100007F:9C41 0100007F:211D 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0
               2: 0100007F:9C42 0100007F:211D 01 00000000:00000000 00:00000000 00000000     0        0 0 1 0
               3: 0100007F:9C43 0100007F:211D 08 00000000:00000000 00:00000000 00000000  1000        0 77 1 0
            """
        let server = try SocketAddress(ipAddress: "127.0.0.1", port: 8477)
        for port in [40_000, 40_001, 40_002] {
            let client = try SocketAddress(ipAddress: "127.0.0.1", port: port)
            #expect(LoopbackPeer.uid(remote: client, local: server, table: { _ in table }) == nil, "port \(port)")
        }
        // A client that half-closed (CLOSE_WAIT at its end is not possible; FIN_WAIT at ours) but
        // still holds its socket is still its owner's.
        let holding = try SocketAddress(ipAddress: "127.0.0.1", port: 40_003)
        #expect(LoopbackPeer.uid(remote: holding, local: server, table: { _ in table }) == 1000)
    }

    @Test("A real loopback connection of this process is this uid's, found among every socket")
    func realConnection() throws {
        // Enough other sockets that the kernel's table spans several pages.
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        func listener() throws -> (Int32, UInt16) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            try withUnsafeMutablePointer(to: &address) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    guard bind(fd, $0, length) == 0, listen(fd, 8) == 0, getsockname(fd, $0, &length) == 0 else {
                        throw WebConfigurationError("bind: \(errno)")
                    }
                }
            }
            return (fd, UInt16(bigEndian: address.sin_port))
        }
        for _ in 0..<64 { held.append(try listener().0) }
        let (server, port) = try listener()
        held.append(server)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        held.append(client)
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        target.sin_port = port.bigEndian
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &target) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 else { throw WebConfigurationError("connect: \(errno)") }
            }
        }
        _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client, $0, &length) } }
        let remote = try SocketAddress(ipAddress: "127.0.0.1", port: Int(UInt16(bigEndian: local.sin_port)))
        let ours = try SocketAddress(ipAddress: "127.0.0.1", port: Int(port))
        #expect(LoopbackPeer.uid(remote: remote, local: ours) == getuid())
        // Closed before its request is read (the attack: send, close at once), the client's end
        // is an orphan the kernel lists as root's: it is no one's.
        close(client)
        held.removeAll { $0 == client }
        #expect(LoopbackPeer.uid(remote: remote, local: ours) == nil)
    }
}

@Suite("blefleet-web without passwords gives a local account what the daemon's socket gives it")
struct LocalRolesTests {
    static let control: UInt32 = 500
    static let readOnly: UInt32 = 501
    let access = FleetRPC.DaemonStatus.Access(controlGroup: "blefleet", readOnlyGroup: "blefleet-ro")

    func roles(_ groups: [UInt32: Set<UInt32>]) -> LocalRoles {
        LocalRoles(
            ownUID: 999, groupsOf: { groups[$0] },
            groupID: { ["blefleet": Self.control, "blefleet-ro": Self.readOnly][$0] })
    }

    func role(_ outcome: LocalRoles.Outcome) -> WebRole? {
        if case .user(let user) = outcome { return user.role }
        return nil
    }

    @Test("Root, its own account and the control group control; the read-only group looks")
    func members() {
        let roles = roles([1000: [1000, Self.control], 1001: [1001, Self.readOnly], 1002: [1002, Self.control, Self.readOnly]])
        #expect(role(roles.resolve(uid: 0, access: nil)) == .control)
        #expect(role(roles.resolve(uid: 999, access: nil)) == .control)
        #expect(role(roles.resolve(uid: 1000, access: access)) == .control)
        #expect(role(roles.resolve(uid: 1001, access: access)) == .readOnly)
        #expect(role(roles.resolve(uid: 1002, access: access)) == .control)
    }

    @Test("A stranger, an account NSS does not know and an end no one holds are refused, each with why")
    func strangers() {
        let roles = roles([65534: [65534]])
        guard case .refused(let status, let sentence) = roles.resolve(uid: 65534, access: access) else {
            Issue.record("a stranger was let in")
            return
        }
        #expect(status == .forbidden)
        #expect(sentence.contains("join 'blefleet-ro' to look or 'blefleet' to switch"), "\(sentence)")
        #expect(role(roles.resolve(uid: 4242, access: access)) == nil)
        guard case .refused(.forbidden, let unknown) = roles.resolve(uid: nil, access: access) else {
            Issue.record("an unknown end was let in")
            return
        }
        #expect(unknown.contains("cannot tell which local account"))
        // Without a read-only group, a member of none is told the one group there is.
        guard case .refused(_, let only) = roles.resolve(uid: 65534, access: .init(controlGroup: "lab", readOnlyGroup: nil)) else {
            Issue.record("a stranger was let in")
            return
        }
        #expect(only.hasSuffix("join 'lab'."), "\(only)")
    }

    @Test("Until the daemon has said its groups, only root and the web's own account are served")
    func daemonNotHeard() {
        let roles = roles([1000: [1000, Self.control]])
        guard case .refused(.serviceUnavailable, let sentence) = roles.resolve(uid: 1000, access: nil) else {
            Issue.record("served without the daemon's groups")
            return
        }
        #expect(sentence.contains("has not heard from blefleetd yet"))
    }

    @Test("An account taken out of the control group loses control once its groups are looked up again")
    func revocation() {
        let groups = Mutex<[UInt32: Set<UInt32>]>([1000: [1000, Self.control]])
        let roles = LocalRoles(
            ownUID: 999, lifetime: .seconds(5), groupsOf: { uid in groups.withLock { $0[uid] } },
            groupID: { ["blefleet": Self.control, "blefleet-ro": Self.readOnly][$0] })
        let start = ContinuousClock.now
        #expect(role(roles.resolve(uid: 1000, access: access, now: start)) == .control)
        groups.withLock { $0[1000] = [1000] }
        #expect(role(roles.resolve(uid: 1000, access: access, now: start + .seconds(4))) == .control)
        #expect(role(roles.resolve(uid: 1000, access: access, now: start + .seconds(6))) == nil)
    }
}

@Suite("blefleet-web's /rpc offers the page's calls, each to the roles allowed it")
struct WebRPCTests {
    let feed = FleetFeed(socketPath: "/nonexistent/blefleetd.sock", logger: Logger(label: "test"))

    func call(_ method: String, as role: WebRole) async throws -> JSONValue {
        let body = Array(#"{"jsonrpc":"2.0","id":7,"method":"\#(method)","params":{}}"#.utf8)
        return try JSONValue(parsing: await WebServer.rpc(body, user: WebUser(name: "sam", role: role), feed: feed))
    }

    @Test("A read-only user's led.set is refused before it reaches the daemon")
    func readOnly() async throws {
        let reply = try await call("led.set", as: .readOnly)
        #expect(reply["error"]?["code"] == -32000)
        #expect(reply["error"]?["message"]?.stringValue?.contains("sam may only look") == true)
        #expect(reply["id"] == 7)
    }

    @Test("Raw GATT, forgetting boards, scans: offered to nobody")
    func notOffered() async throws {
        for method in ["gatt.write", "gatt.read", "boards.forget", "boards.scan", "boards.connect", "boards.disconnect", "rpc.discover"] {
            for role in [WebRole.control, .readOnly] {
                let reply = try await call(method, as: role)
                #expect(reply["error"]?["code"] == -32601, "\(method)")
                #expect(reply["error"]?["message"]?.stringValue?.contains("does not offer \(method)") == true)
            }
        }
    }

    @Test("An offered call of the right role goes on to the daemon (here: not reachable)")
    func passedOn() async throws {
        for (method, role) in [("led.set", WebRole.control), ("boards.list", .readOnly), ("history.read", .readOnly)] {
            let reply = try await call(method, as: role)
            #expect(reply["error"]?["code"] == -32603, "\(method): \(reply)")
        }
    }
}
