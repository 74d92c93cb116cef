import Foundation
import Logging
import TestSupport
import Testing

@testable import FleetCore

@Suite struct RegistryTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    let a = BoardAddress("02:00:00:00:00:01")!
    let b = BoardAddress("02:00:00:00:00:02")!
    let logger = Logger(label: "test.registry")

    func withRegistry(_ body: (Registry, String) async throws -> Void) async throws {
        let url = try makeTemporaryDirectory(prefix: "registry")
        defer { try? FileManager.default.removeItem(at: url) }
        let registry = Registry(directory: url.path, lastSeenInterval: .seconds(60), logger: logger, now: t0)
        try await body(registry, url.path)
    }

    /// What is on disk now.
    func onDisk(_ dir: String) -> [BoardRecord] { RegistryFile(directory: dir).load().boards }

    @Test func newBoardsAreSavedAtOnce() async throws {
        try await withRegistry { registry, dir in
            let first = try await registry.noteSeen(a, name: "nano-01", at: t0)
            #expect(first)
            #expect(onDisk(dir).map(\.address) == [a])
            let second = try await registry.noteSeen(a, name: "nano-01", at: t0 + 1)
            #expect(second == false)
        }
    }

    @Test func lastSeenIsCoalesced() async throws {
        try await withRegistry { registry, dir in
            try await registry.noteSeen(a, name: "nano-01", at: t0)
            try await registry.noteSeen(a, name: "nano-01", at: t0 + 10)
            try await registry.noteSeen(a, name: "nano-01", at: t0 + 30)
            #expect(onDisk(dir).first?.lastSeen == t0)
            #expect(await registry.record(for: a)?.lastSeen == t0 + 30)
            #expect(await registry.hasUnsavedChanges)
            try await registry.flushIfDue(now: t0 + 59)
            #expect(onDisk(dir).first?.lastSeen == t0)
            try await registry.flushIfDue(now: t0 + 60)
            #expect(onDisk(dir).first?.lastSeen == t0 + 30)
            #expect(await registry.hasUnsavedChanges == false)
            // A sighting after the interval saves by itself.
            try await registry.noteSeen(a, name: "nano-01", at: t0 + 125)
            #expect(onDisk(dir).first?.lastSeen == t0 + 125)
            // flush() saves whatever is pending (shutdown).
            try await registry.noteSeen(a, name: "nano-01", at: t0 + 130)
            try await registry.flush(now: t0 + 131)
            #expect(onDisk(dir).first?.lastSeen == t0 + 130)
        }
    }

    @Test func userChangesAreSavedAtOnce() async throws {
        try await withRegistry { registry, dir in
            try await registry.noteSeen(a, name: "nano-01", at: t0)
            try await registry.noteSeen(b, name: "nano-02", at: t0)
            try await registry.setAlias("kitchen", for: a, now: t0 + 1)
            try await registry.setDesiredLED(.on, for: b, now: t0 + 2)
            try await registry.noteSeen(b, name: "renamed", at: t0 + 3)
            var disk = onDisk(dir)
            #expect(disk.map(\.alias) == ["kitchen", nil])
            #expect(disk.map(\.desiredLED) == [.unknown, .on])
            #expect(disk.map(\.name) == ["nano-01", "renamed"])
            let forgotten = try await registry.forget(a, now: t0 + 4)
            let again = try await registry.forget(a, now: t0 + 5)
            #expect(forgotten && !again)
            disk = onDisk(dir)
            #expect(disk.map(\.address) == [b])
            // Survives a restart.
            let reopened = Registry(directory: dir, logger: logger)
            #expect(await reopened.boards == disk)
            #expect(reopened.loadIssues.isEmpty)
        }
    }

    @Test func aliasesAreValidatedAndUnique() async throws {
        try await withRegistry { registry, _ in
            try await registry.noteSeen(a, name: "nano-01", at: t0)
            try await registry.noteSeen(b, name: "nano-02", at: t0)
            try await registry.setAlias("kitchen", for: a)
            await #expect(throws: RegistryError(message: "The alias \"kitchen\" is already used by 02:00:00:00:00:01.")) {
                try await registry.setAlias("kitchen", for: b)
            }
            for bad in ["all", "aa:bb:cc:dd:ee:ff", "lab*", "a,b"] {
                await #expect(throws: RegistryError.self) { try await registry.setAlias(bad, for: b) }
            }
            await #expect(throws: RegistryError(message: "No board with address 02:00:00:00:00:09 is known.")) {
                try await registry.setAlias("x", for: BoardAddress("02:00:00:00:00:09")!)
            }
            try await registry.setAlias(" ", for: a)
            #expect(await registry.record(for: a)?.alias == nil)
        }
    }

    /// Who a board is, as a selection resolves it: the registry's name and alias, read
    /// without a hop to it, as soon as a change is made (the fleet keeps no copy).
    @Test func aBoardsIdentityIsTheRegistrysAtOnce() async throws {
        try await withRegistry { registry, _ in
            #expect(registry.identity(of: a) == nil)
            try await registry.noteSeen(a, name: "nano-01", at: t0)
            #expect(registry.identity(of: a) == BoardIdentity(address: a, name: "nano-01"))
            try await registry.setAlias("door", for: a, now: t0)
            try await registry.noteSeen(a, name: "nano-07", at: t0 + 1)
            #expect(registry.identity(of: a) == BoardIdentity(address: a, name: "nano-07", alias: "door"))
            try await registry.forget(a, now: t0 + 2)
            #expect(registry.identity(of: a) == nil)
        }
    }

    @Test func corruptFileIsMovedAsideAndRegistryStartsEmpty() async throws {
        let url = try makeTemporaryDirectory(prefix: "registry")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("not json".utf8).write(to: url.appendingPathComponent("boards.json"))
        let registry = Registry(directory: url.path, logger: logger)
        #expect(await registry.boards.isEmpty)
        #expect(registry.loadIssues.count == 1)
        let movedTo = try #require(registry.loadIssues.first?.movedTo)
        #expect(try String(contentsOfFile: movedTo, encoding: .utf8) == "not json")
        // Saving now writes a fresh file and leaves the moved one alone.
        try await registry.noteSeen(a, name: nil, at: t0)
        #expect(onDisk(url.path).map(\.address) == [a])
        #expect(try String(contentsOfFile: movedTo, encoding: .utf8) == "not json")
    }
}

extension Date {
    static func + (lhs: Date, rhs: Int) -> Date { lhs.addingTimeInterval(TimeInterval(rhs)) }
}
