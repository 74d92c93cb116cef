@testable import FleetWeb
import Hummingbird
import Foundation
import Testing

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
