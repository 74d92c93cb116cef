public import Foundation

/// A real Mosquitto broker (`/usr/sbin/mosquitto`) on 127.0.0.1 and a free port, with its
/// configuration, password file, ACL file and log in a temporary directory. Killed and its
/// directory removed at deinit. `mosquitto_sub` / `mosquitto_pub` act as an independent
/// referee (`MosquittoBroker+Referee.swift`).
public final class MosquittoBroker: @unchecked Sendable {
    // Safe: `child` is only read and written under `lock`; everything else is immutable.
    public let port: Int
    public let directory: URL
    public let allowAnonymous: Bool
    /// The CA certificate (PEM) that signed the broker's certificate, when it speaks TLS.
    public let caFile: String?
    private let lock = NSLock()
    private var child: ChildProcess?

    public static let executable = "/usr/sbin/mosquitto"

    /// `mqtt://127.0.0.1:PORT`, or `mqtts://localhost:PORT` for a TLS broker (its
    /// certificate names localhost and 127.0.0.1).
    public var url: String { caFile == nil ? "mqtt://127.0.0.1:\(port)" : "mqtts://localhost:\(port)" }
    public var logFile: URL { directory.appendingPathComponent("mosquitto.log") }
    /// Everything the broker logged so far (for failure messages).
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Writes the configuration and, when `start` is true, starts the broker and waits
    /// until it accepts connections. `users` go to a password file (`mosquitto_passwd`);
    /// `acl` is the text of an ACL file (`user NAME` / `topic read|write|readwrite TOPIC`).
    /// With `tls`, the listener speaks TLS with a certificate from a CA made for it (`caFile`).
    public init(
        allowAnonymous: Bool = true, users: [String: String] = [:], acl: String? = nil, tls: Bool = false,
        start: Bool = true
    ) async throws {
        self.port = try Self.freePort()
        let directory = try makeTemporaryDirectory(prefix: "blefleet-mosquitto")
        self.directory = directory
        self.allowAnonymous = allowAnonymous
        self.caFile = tls ? directory.appendingPathComponent("ca.pem").path : nil
        var config = [
            "listener \(port) 127.0.0.1",
            "allow_anonymous \(allowAnonymous)",
            "persistence false",
            "log_dest stderr",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "connection_messages true",
            // A broker started as root drops to the user "mosquitto" unless told otherwise,
            // and could then not read the files here.
            "user \(Self.currentUserName())",
        ]
        if !users.isEmpty {
            let passwords = directory.appendingPathComponent("passwords")
            guard FileManager.default.createFile(atPath: passwords.path, contents: Data()) else {
                throw FixtureError("cannot create \(passwords.path)")
            }
            for (user, password) in users.sorted(by: { $0.key < $1.key }) {
                _ = try await runProcess("/usr/bin/mosquitto_passwd", ["-b", passwords.path, user, password])
            }
            config.append("password_file \(passwords.path)")
        }
        if tls {
            try await Self.makeCertificates(in: directory)
            config += ["cafile \(directory.path)/ca.pem", "certfile \(directory.path)/server.pem", "keyfile \(directory.path)/server.key"]
        }
        if let acl {
            let aclFile = directory.appendingPathComponent("acl")
            try acl.write(to: aclFile, atomically: true, encoding: .utf8)
            config.append("acl_file \(aclFile.path)")
        }
        try (config.joined(separator: "\n") + "\n").write(
            to: directory.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
        if start { try await self.start() }
    }

    deinit {
        if let child = lock.withLock({ self.child }) {
            child.signal(SIGKILL)
            child.wait(timeout: 10)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    public var isRunning: Bool {
        lock.withLock { child?.isRunning ?? false }
    }

    /// Starts the broker (again, on the same port) and waits until it accepts connections.
    public func start(timeout: Duration = .seconds(10)) async throws {
        if isRunning { throw FixtureError("start(): the broker on port \(port) is already running") }
        let logFD = open(logFile.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard logFD >= 0 else { throw FixtureError("cannot open \(logFile.path)") }
        defer { close(logFD) }
        let started = try ChildProcess(
            Self.executable, ["-c", directory.appendingPathComponent("mosquitto.conf").path],
            stdout: logFD, stderr: logFD)
        lock.withLock { child = started }
        do {
            try await eventually("mosquitto accepts connections on port \(port)", within: timeout, every: .milliseconds(10)) {
                if let status = started.status {
                    throw FixtureError("mosquitto exited with status \(status) before accepting connections:\n\(log)")
                }
                return Self.acceptsConnections(port: port)
            }
        } catch let error as EventuallyTimedOut {
            started.signal(SIGKILL)
            throw FixtureError("\(error):\n\(log)")
        }
    }

    /// Stops the broker (SIGTERM, then SIGKILL if it lingers) and waits for it to exit; the
    /// clients see their connection closed without a DISCONNECT from the broker.
    public func stop() async {
        guard let child = lock.withLock({ self.child }) else { return }
        child.signal(SIGTERM)
        if await child.exit(timeout: .seconds(10)) == nil {
            child.signal(SIGKILL)
            _ = await child.exit(timeout: .seconds(10))
        }
    }

    /// Freezes the broker (SIGSTOP): its connections stay open but nothing is answered, as
    /// with a broker that hangs; ``thaw()`` lets it go on.
    public func freeze() {
        lock.withLock { child }?.signal(SIGSTOP)
    }

    public func thaw() {
        lock.withLock { child }?.signal(SIGCONT)
    }

    /// `stop()` then `start()` on the same port.
    public func restart() async throws {
        await stop()
        try await start()
    }

    // MARK: Helpers

    /// A throwaway CA (ca.pem) and a server certificate it signed for localhost and
    /// 127.0.0.1 (server.pem, server.key), EC P-256 keys, valid for a day.
    static func makeCertificates(in directory: URL) async throws {
        let d = directory.path
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
            toFile: "\(d)/server.ext", atomically: true, encoding: .utf8)
        _ = try await runProcess(
            "/usr/bin/openssl",
            ["req", "-x509"] + ec + ["-keyout", "\(d)/ca.key", "-out", "\(d)/ca.pem", "-days", "1", "-subj", "/CN=blefleet test CA"])
        _ = try await runProcess(
            "/usr/bin/openssl",
            ["req"] + ec + ["-keyout", "\(d)/server.key", "-out", "\(d)/server.csr", "-subj", "/CN=localhost"])
        _ = try await runProcess(
            "/usr/bin/openssl",
            ["x509", "-req", "-in", "\(d)/server.csr", "-CA", "\(d)/ca.pem", "-CAkey", "\(d)/ca.key",
             "-CAcreateserial", "-out", "\(d)/server.pem", "-days", "1", "-extfile", "\(d)/server.ext"])
    }

    /// True when a TCP connect to 127.0.0.1:`port` succeeds (the probe is closed at once).
    static func acceptsConnections(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    /// A port the kernel just handed out on 127.0.0.1 (bound, read, released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket(): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw FixtureError("cannot find a free port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    private static func currentUserName() -> String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "root" }
        return String(cString: name)
    }
}
