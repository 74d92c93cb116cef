import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import FleetCore

@Suite struct RegistryFileTests {
    let epoch = Date(timeIntervalSince1970: 1_700_000_000)

    func withDirectory(_ body: (String) throws -> Void) throws {
        let url = try makeTemporaryDirectory(prefix: "registry")
        defer { try? FileManager.default.removeItem(at: url) }
        try body(url.path)
    }

    func files(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func missingFileIsAnEmptyRegistry() throws {
        try withDirectory { dir in
            let loaded = RegistryFile(directory: dir + "/not-yet").load()
            #expect(loaded.boards.isEmpty)
            #expect(loaded.issues.isEmpty)
        }
    }

    @Test func roundTripsAndWritesTheVersionedFormat() throws {
        try withDirectory { dir in
            let file = RegistryFile(directory: dir + "/state")
            let boards = [
                BoardRecord(address: BoardAddress("02:00:00:00:00:02")!, name: "nano-02", alias: nil, desiredLED: .off, firstSeen: epoch, lastSeen: epoch),
                BoardRecord(address: BoardAddress("02:00:00:00:00:01")!, name: "nano-01", alias: "kitchen", desiredLED: .on, firstSeen: epoch, lastSeen: epoch.addingTimeInterval(60)),
            ]
            try file.save(boards)
            let loaded = file.load()
            #expect(loaded.issues.isEmpty)
            #expect(loaded.boards == boards.sorted { $0.address < $1.address })
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file.path))) as? [String: Any]
            #expect(json?["version"] as? Int == 1)
            let first = (json?["boards"] as? [[String: Any]])?.first
            #expect(first?["address"] as? String == "02:00:00:00:00:01")
            #expect(first?["desiredLED"] as? String == "on")
            #expect(first?["lastSeen"] as? String == "2023-11-14T22:14:20Z")
            // Only the registry itself is left: no temporary files.
            #expect(files(in: dir + "/state") == ["boards.json"])
        }
    }

    @Test(arguments: [
        ("{\"version\": 1, \"boards\": [", "it is not a JSON object"),
        ("[1, 2]", "it is not a JSON object"),
        ("{\"boards\": []}", "it has no \"version\" field"),
        ("{\"version\": 2, \"boards\": []}", "it has version 2; this blefleetd reads version 1"),
        ("{\"version\": 1, \"boards\": [{\"address\": \"nope\"}]}", "it is not a valid registry"),
        ("{\"version\": 1}", "it is not a valid registry (missing \"boards\")"),
    ])
    func corruptFileIsReportedAndMovedAside(_ content: String, _ reason: String) throws {
        try withDirectory { dir in
            let file = RegistryFile(directory: dir)
            try Data(content.utf8).write(to: URL(fileURLWithPath: file.path))
            let now = Date(timeIntervalSince1970: 1_700_000_000)
            let loaded = file.load(now: now)
            #expect(loaded.boards.isEmpty)
            let issue = try #require(loaded.issues.first)
            #expect(issue.severity == .error)
            #expect(issue.path == file.path)
            #expect(issue.reason.hasPrefix(reason), "\(issue.reason)")
            #expect(issue.movedTo == dir + "/boards.json.corrupt-20231114T221320Z")
            #expect(issue.description.contains("was not loaded"))
            // The bad content is kept, byte for byte, and the registry path is free.
            #expect(try String(contentsOfFile: issue.movedTo!, encoding: .utf8) == content)
            #expect(!FileManager.default.fileExists(atPath: file.path))
            // A second bad file in the same second does not overwrite the first.
            try Data("garbage".utf8).write(to: URL(fileURLWithPath: file.path))
            let again = file.load(now: now)
            #expect(again.issues.first?.movedTo == dir + "/boards.json.corrupt-20231114T221320Z-1")
            #expect(try String(contentsOfFile: issue.movedTo!, encoding: .utf8) == content)
        }
    }

    @Test func duplicateAddressesAreCorrupt() throws {
        try withDirectory { dir in
            let file = RegistryFile(directory: dir)
            let one = BoardRecord(address: BoardAddress("02:00:00:00:00:01")!, firstSeen: epoch, lastSeen: epoch)
            try file.save([one])
            let text = try String(contentsOfFile: file.path, encoding: .utf8)
            let entry = String(text[text.range(of: "{\n      \"address\"")!.lowerBound...].prefix { $0 != "}" }) + "}"
            try text.replacingOccurrences(of: entry, with: entry + "," + entry).write(toFile: file.path, atomically: false, encoding: .utf8)
            let loaded = file.load()
            #expect(loaded.issues.first?.reason == "it lists 02:00:00:00:00:01 twice")
        }
    }

    @Test func unreadableFileIsReportedAndMovedAside() throws {
        try withDirectory { dir in
            // A directory where the file should be: open succeeds, read fails (even as root).
            let file = RegistryFile(directory: dir)
            try FileManager.default.createDirectory(atPath: file.path, withIntermediateDirectories: false)
            let loaded = file.load()
            #expect(loaded.boards.isEmpty)
            #expect(loaded.issues.first?.reason == "it cannot be read: Is a directory")
            let movedTo = try #require(loaded.issues.first?.movedTo)
            #expect(movedTo.hasPrefix(dir + "/boards.json.corrupt-"))
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: movedTo, isDirectory: &isDirectory) && isDirectory.boolValue)
            // The path is free again: saving works.
            try file.save([])
            #expect(file.load().issues.isEmpty)
        }
    }

    @Test func staleTemporaryFilesAreRemovedOnLoad() throws {
        try withDirectory { dir in
            let file = RegistryFile(directory: dir)
            try file.save([BoardRecord(address: BoardAddress("02:00:00:00:00:01")!, firstSeen: epoch, lastSeen: epoch)])
            try Data("{\"vers".utf8).write(to: URL(fileURLWithPath: dir + "/boards.json.tmp-AbC123"))
            let loaded = file.load()
            #expect(loaded.boards.count == 1)
            #expect(loaded.issues.map(\.severity) == [.notice])
            #expect(files(in: dir) == ["boards.json"])
        }
    }

    /// The boards the `registry-writer` fixture writes for generation `g` (same function).
    static func boards(generation g: Int) -> [BoardRecord] {
        let epoch = Date(timeIntervalSince1970: 1_700_000_000)
        var boards: [BoardRecord] = []
        for i in 0...(g % 40) {
            let address = BoardAddress(String(format: "02:00:00:00:%02X:%02X", i / 256, i % 256))!
            let name: String = "gen-\(g)-board-\(i)-" + String(repeating: "x", count: 40)
            let alias: String? = i % 3 == 0 ? "alias-\(g)-\(i)" : nil
            let led: DesiredLED = (g + i) % 2 == 0 ? .on : .off
            let lastSeen = epoch.addingTimeInterval(Double(g))
            boards.append(BoardRecord(address: address, name: name, alias: alias, desiredLED: led, firstSeen: epoch, lastSeen: lastSeen))
        }
        return boards
    }

    static var writerExecutable: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("registry-writer").path
    }

    @Test func registrySurvivesASIGKILLInTheMiddleOfWrites() throws {
        let executable = Self.writerExecutable
        try #require(FileManager.default.isExecutableFile(atPath: executable), "build the registry-writer fixture first (swift build --build-tests)")
        try withDirectory { dir in
            var generation = 1
            var seenGenerations: [Int] = []
            var random = SystemRandomNumberGenerator()
            for round in 0..<10 {
                // ChildProcess (bounded waits, its own waitpid), not Foundation's Process,
                // whose exit monitor can miss a child's exit under concurrent tests.
                let stdout = Pipe()
                _ = fcntl(stdout.fileHandleForReading.fileDescriptor, F_SETFD, FD_CLOEXEC)
                let process = try ChildProcess(
                    executable, [dir, String(generation)],
                    stdout: stdout.fileHandleForWriting.fileDescriptor, stderr: FileHandle.standardError.fileDescriptor)
                try stdout.fileHandleForWriting.close()
                defer {
                    process.signal(SIGKILL)
                    process.wait(timeout: 10)
                }
                // Wait (bounded) for the first complete save.
                let started = DispatchSemaphore(value: 0)
                let reader = stdout.fileHandleForReading
                Thread.detachNewThread {
                    _ = reader.availableData
                    started.signal()
                }
                try #require(started.wait(timeout: .now() + 30) == .success, "registry-writer did not start")
                // Let it write for a random while, then kill it wherever it is.
                usleep(UInt32.random(in: 1_000...40_000, using: &random))
                process.signal(SIGKILL)
                #expect(process.wait(timeout: 10) == 128 + SIGKILL, "round \(round)")

                let loaded = RegistryFile(directory: dir).load()
                #expect(!loaded.issues.contains { $0.severity != .notice }, "round \(round): \(loaded.issues)")
                let name = try #require(loaded.boards.first?.name, "round \(round): registry empty")
                let g = try #require(Int(name.split(separator: "-")[1]))
                #expect(loaded.boards == Self.boards(generation: g), "round \(round): generation \(g) is incomplete or mixed")
                #expect(g >= generation, "round \(round): went back in time")
                #expect(files(in: dir) == ["boards.json"], "round \(round): leftovers \(files(in: dir))")
                seenGenerations.append(g)
                generation = g + 1
            }
            // The writer made progress across rounds (it really was writing when killed).
            #expect(seenGenerations.count == 10)
            #expect(Set(seenGenerations).count == 10)
        }
    }
}
