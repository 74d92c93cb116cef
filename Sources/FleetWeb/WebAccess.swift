import CCrypt
import FoundationEssentials
import Glibc
import Synchronization

/// A setting blefleet-web cannot start with, said as a sentence.
public struct WebConfigurationError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Where blefleet-web listens: `HOST:PORT`, `[IPv6]:PORT`.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// Loopback and the port blefleet-web listens on when not told otherwise.
    public static let `default` = ListenAddress(host: "127.0.0.1", port: 8477)

    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public init(parsing text: String) throws(WebConfigurationError) {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw WebConfigurationError("--listen \(text): write an IPv6 address as [ADDRESS]:PORT, such as [::1]:8477")
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw WebConfigurationError("--listen \(text): expected HOST:PORT, such as 127.0.0.1:8477 or 0.0.0.0:8477")
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty else {
            throw WebConfigurationError("--listen \(text): the host is missing (0.0.0.0 for every IPv4 address, [::] for every address)")
        }
        guard let number = Int(port), (1...65535).contains(number) else {
            throw WebConfigurationError("--listen \(text): the port must be a number from 1 to 65535")
        }
        self.init(host: String(host), port: number)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether only this machine can reach the address: every address the host resolves to
    /// is a loopback one (127.0.0.0/8, ::1). A name that does not resolve is not.
    public var isLoopback: Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return false }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            guard let address = current.pointee.ai_addr else { return false }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                let ip = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
                if ip >> 24 != 127 { return false }
            case AF_INET6:
                let loopback = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer -> Bool in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { bytes in
                        bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1
                    }
                }
                if !loopback { return false }
            default:
                return false
            }
            entry = current.pointee.ai_next
        }
        return true
    }
}

/// What a web user may do through blefleet-web: the roles of the daemon's socket.
public enum WebRole: String, Sendable, Hashable {
    /// Switches LEDs from the page (the daemon's control group).
    case control
    /// Sees the fleet, switches nothing (the daemon's read-only group).
    case readOnly = "read-only"
}

/// Who a request comes from, as blefleet-web knows them: a user of `--auth-file`, or, without
/// one, the local account the kernel says opened the connection.
public struct WebUser: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let role: WebRole

    public init(name: String, role: WebRole) {
        self.name = name
        self.role = role
    }

    public var description: String { "\(name) (\(role.rawValue))" }
}

/// The users of `--auth-file`: one `USER:HASH` or `USER:HASH:ROLE` a line, HASH a crypt(3)
/// hash as `mkpasswd -m yescrypt`, `mkpasswd -m sha-512` or `htpasswd -nB USER` write them,
/// ROLE `control` (the default: what a line without one always meant) or `read-only`; empty
/// lines and lines starting with `#` are skipped. Passwords are checked with libxcrypt.
public final class AuthFile: Sendable {
    struct Entry: Sendable {
        let hash: String
        let role: WebRole
    }

    let users: [String: Entry]
    /// Authorization headers already checked and found good, with their user (a hash costs
    /// tens of ms; a page sends the header with every request).
    private let accepted = Mutex<[String: WebUser]>([:])

    public var userCount: Int { users.count }

    public init(users: [String: String], roles: [String: WebRole] = [:]) {
        self.users = users.reduce(into: [:]) { $0[$1.key] = Entry(hash: $1.value, role: roles[$1.key] ?? .control) }
    }

    public convenience init(path: String) throws(WebConfigurationError) {
        guard access(path, R_OK) == 0 else {
            throw WebConfigurationError("--auth-file \(path): cannot be read (\(String(cString: strerror(errno)).lowercased()))")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw WebConfigurationError("--auth-file \(path): cannot be read as UTF-8 text")
        }
        try self.init(parsing: text, path: path)
    }

    public init(parsing text: String, path: String) throws(WebConfigurationError) {
        var users: [String: Entry] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = raw
            while let first = line.first, first == " " || first == "\t" { line.removeFirst() }
            while let last = line.last, last == " " || last == "\t" || last == "\r" { line.removeLast() }
            let number = index + 1
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            // A crypt(3) hash has no colon: USER:HASH or USER:HASH:ROLE.
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2 || fields.count == 3, !fields[0].isEmpty else {
                throw WebConfigurationError(
                    "\(path) line \(number): expected USER:HASH or USER:HASH:ROLE (make one with: htpasswd -nB USER)")
            }
            let user = String(fields[0])
            let hash = String(fields[1])
            guard users[user] == nil else {
                throw WebConfigurationError("\(path) line \(number): the user \(user) is already given on an earlier line")
            }
            let role: WebRole
            if fields.count == 3 {
                guard let given = WebRole(rawValue: String(fields[2])) else {
                    throw WebConfigurationError(
                        "\(path) line \(number): the role of \(user) is '\(fields[2])'; it is control or read-only")
                }
                role = given
            } else {
                role = .control
            }
            switch crypt_checksalt(hash) {
            case CRYPT_SALT_OK:
                break
            case CRYPT_SALT_METHOD_LEGACY, CRYPT_SALT_METHOD_DISABLED:
                throw WebConfigurationError(
                    "\(path) line \(number): the hash of \(user) uses a method too weak to accept; make a yescrypt or bcrypt one (mkpasswd -m yescrypt, or htpasswd -nB \(user))")
            default:
                throw WebConfigurationError(
                    "\(path) line \(number): the hash of \(user) is not a crypt(3) hash (htpasswd's default MD5 is not one); make one with mkpasswd -m yescrypt or htpasswd -nB \(user)")
            }
            users[user] = Entry(hash: hash, role: role)
        }
        guard !users.isEmpty else {
            throw WebConfigurationError("\(path): has no USER:HASH line, so nobody could log in")
        }
        self.users = users
    }

    /// The user whose name and password `header` (an `Authorization` value) gives in HTTP
    /// basic authentication, if they are right.
    public func user(authorization header: String?) -> WebUser? {
        guard let header else { return nil }
        if let known = accepted.withLock({ $0[header] }) { return known }
        guard let (name, password) = Self.credentials(authorization: header) else { return nil }
        guard verify(user: name, password: password), let entry = users[name] else { return nil }
        let user = WebUser(name: name, role: entry.role)
        accepted.withLock {
            if $0.count >= 256 { $0.removeAll() }
            $0[header] = user
        }
        return user
    }

    /// The user name and password an `Authorization` header gives in HTTP basic authentication.
    static func credentials(authorization header: String) -> (user: String, password: String)? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Data(base64Encoded: String(parts[1].filter { $0 != " " })),
            let pair = String(data: decoded, encoding: .utf8), let colon = pair.firstIndex(of: ":")
        else { return nil }
        return (String(pair[..<colon]), String(pair[pair.index(after: colon)...]))
    }

    /// The user of a header already checked and found good, without hashing anything.
    func remembered(authorization header: String?) -> WebUser? {
        guard let header else { return nil }
        return accepted.withLock { $0[header] }
    }

    /// Whether `header` lets a user of the file in.
    public func accepts(authorization header: String?) -> Bool { user(authorization: header) != nil }

    /// Hashes `password` with the user's hash as setting and compares, in constant time. An
    /// unknown user costs a hash too, so timing does not tell which users exist.
    public func verify(user: String, password: String) -> Bool {
        let known = users[user]?.hash
        let setting = known ?? users.values.first?.hash ?? "$y$j9T$AAAAAAAAAAAAAAAAAAAAA."
        guard let computed = Self.crypt(password, setting: setting) else { return false }
        let a = Array(computed.utf8)
        let b = Array(setting.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0 && known != nil
    }

    static func crypt(_ phrase: String, setting: String) -> String? {
        let data = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<crypt_data>.size, alignment: MemoryLayout<crypt_data>.alignment)
        memset(data, 0, MemoryLayout<crypt_data>.size)
        defer {
            memset(data, 0, MemoryLayout<crypt_data>.size)
            data.deallocate()
        }
        guard let result = crypt_rn(phrase, setting, data, Int32(MemoryLayout<crypt_data>.size)) else { return nil }
        return String(cString: result)
    }
}
