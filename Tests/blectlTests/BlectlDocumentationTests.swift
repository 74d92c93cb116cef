import FleetRPC
import JSONRPC
import Foundation
import TestSupport
import Testing

@Suite("blectl documentation and completion")
struct BlectlDocumentationTests {
    static let manPage = repositoryRoot.appendingPathComponent("man/blectl.1").path

    /// Every command path (`gatt read`…) and every long option, from the parser itself.
    static func commandsAndOptions() async throws -> (commands: [String], options: Set<String>) {
        let output = try await Blectl.run(["--experimental-dump-help"])
        let root = try #require(try JSONValue(parsing: output.stdout)["command"])
        var commands: [String] = []
        var options: Set<String> = []
        func walk(_ command: JSONValue, path: [String]) {
            for argument in command["arguments"]?.arrayValue ?? [] {
                for name in argument["names"]?.arrayValue ?? [] where name["kind"] == "long" {
                    if let long = name["name"]?.stringValue { options.insert("--" + long) }
                }
            }
            for sub in command["subcommands"]?.arrayValue ?? [] {
                guard let name = sub["commandName"]?.stringValue, name != "help" else { continue }
                commands.append((path + [name]).joined(separator: " "))
                walk(sub, path: path + [name])
            }
        }
        walk(root, path: [])
        return (commands, options)
    }

    @Test("Every subcommand and every option is in man/blectl.1")
    func manPageCoversEverything() async throws {
        let man = try String(contentsOfFile: Self.manPage, encoding: .utf8)
        // Render to text so roff markup (`.Cm`, `Fl -`) does not hide the words.
        let rendered = try runCommand("/usr/bin/mandoc", ["-Tascii", "-Owidth=200", Self.manPage])
            .replacingOccurrences(of: "\u{8}.", with: "", options: .regularExpression)
        let (commands, options) = try await Self.commandsAndOptions()
        #expect(commands.count >= 14)
        for command in commands {
            let words = command.split(separator: " ")
            #expect(words.allSatisfy { man.contains(".Cm \($0)") || man.contains("Cm \($0)") || rendered.contains(" \($0) ") },
                    "\(command) is not in the man page")
            #expect(rendered.contains(command) || rendered.contains(words.last!), "\(command) is not in the man page")
        }
        for option in options.subtracting(["--experimental-dump-help"]) {
            #expect(rendered.contains(option), "\(option) is not in the man page")
        }
        for status in ["69", "77", "BLEFLEET_SOCKET", "NO_COLOR", "blefleetd(8)", "blefleetd.conf(5)", "blefleet-rpc(7)"] {
            #expect(rendered.contains(status), "\(status) is not in the man page")
        }
    }

    @Test("mandoc -Tlint finds nothing but the cross references to pages not installed yet")
    func manPageLints() async throws {
        // ChildProcess, not Foundation's Process: that one, at high concurrency, can close a
        // pipe's descriptor twice (swiftlang/swift#57827), and another test's FileHandle dies.
        let result = try await ChildProcess.run("/usr/bin/mandoc", ["-Tlint", Self.manPage])
        let text = result.stdout + result.stderr
        let allowed = [
            "Xr blefleetd 8", "Xr blefleetd.conf 5", "Xr blefleet-rpc 7", "Xr blefleet-mqtt 7", "Xr blefleet-profile 5", "Xr blefleet-web 8",
        ]
        for line in text.split(separator: "\n") {
            #expect(
                line.contains("STYLE: referenced manual not found") && allowed.contains { line.contains($0) },
                "mandoc: \(line)")
        }
    }

    @Test("Completion scripts for bash, zsh and fish name every subcommand", arguments: ["bash", "zsh", "fish"])
    func completion(shell: String) async throws {
        let output = try await Blectl.run(["--generate-completion-script", shell])
        #expect(output.status == 0, "\(output)")
        for command in try await Self.commandsAndOptions().commands {
            #expect(output.stdout.contains(String(command.split(separator: " ").last!)), "\(command) missing for \(shell)")
        }
    }

    @Test("Board names complete from the daemon, and to nothing when it is unreachable")
    func boardCompletion() async throws {
        let requests = Requests()
        let handler = BlectlDaemonReplyTests.serve(
            ["boards.list": ["boards": [
                ["address": "AA:BB:CC:DD:EE:01", "name": "nano-01", "state": "ready"],
                ["address": "AA:BB:CC:DD:EE:02", "name": "nano-02", "alias": "freezer", "state": "absent"],
            ]]], requests: requests)
        try await LineJSONServer.with(handler: handler) { server in
            let output = try await Blectl.run(
                ["---completion", "led", "--", "positional@1", "3", "0", "blectl", "led", "on", ""],
                environment: Blectl.environment(["BLEFLEET_SOCKET": server.path]))
            let candidates = Set(output.stdout.split(separator: "\n").map(String.init))
            #expect(candidates.isSuperset(of: ["nano-01", "nano-02", "freezer", "AA:BB:CC:DD:EE:01"]), "\(output)")
        }
        let none = try await Blectl.run(
            ["---completion", "led", "--", "positional@1", "3", "0", "blectl", "led", "on", ""],
            environment: Blectl.environment(["BLEFLEET_SOCKET": "/nonexistent/blefleetd.sock"]))
        #expect(none.status == 0, "\(none)")
        #expect(none.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        #expect(none.stderr.isEmpty)
    }
}
