import Testing

@testable import FleetCore

@Suite struct SelectionTests {
    let boards = [
        BoardIdentity(address: BoardAddress("C0:98:E5:49:00:01")!, name: "nano-01", alias: "kitchen"),
        BoardIdentity(address: BoardAddress("C0:98:E5:49:00:02")!, name: "nano-02"),
        BoardIdentity(address: BoardAddress("D0:00:00:00:00:03")!, name: "iOSArduinoBoard", alias: "lab"),
        BoardIdentity(address: BoardAddress("D0:00:00:00:00:04")!, name: "iOSArduinoBoard"),
    ]

    func addresses(_ match: Selection.Match) -> [String] { match.boards.map(\.address.rawValue) }

    @Test func parsesEachKindOfSelector() throws {
        #expect(try Selection.Selector(parsing: "all") == .all)
        #expect(try Selection.Selector(parsing: "c0:98:e5:49:00:01") == .address(BoardAddress("C0:98:E5:49:00:01")!))
        #expect(try Selection.Selector(parsing: " nano-01 ") == .name("nano-01"))
        #expect(try Selection.Selector(parsing: "nano-*") == .glob(GlobPattern("nano-*")))
        #expect(throws: FleetError.self) { try Selection.Selector(parsing: "  ") }
        #expect(throws: FleetError.self) { try Selection(parsing: []) }
    }

    @Test func allSelectsEveryBoard() {
        let match = Selection.all.match(boards)
        #expect(match.boards == boards)
        #expect(match.unmatched.isEmpty)
        #expect(Selection.all.match([]).unmatched.isEmpty)
    }

    @Test func addressNameAliasAndGlob() throws {
        #expect(addresses(try Selection(parsing: ["c0:98:e5:49:00:02"]).match(boards)) == ["C0:98:E5:49:00:02"])
        #expect(addresses(try Selection(parsing: ["kitchen"]).match(boards)) == ["C0:98:E5:49:00:01"])
        // Names are not unique: a name selects every board carrying it.
        #expect(addresses(try Selection(parsing: ["iOSArduinoBoard"]).match(boards)) == ["D0:00:00:00:00:03", "D0:00:00:00:00:04"])
        #expect(addresses(try Selection(parsing: ["nano-0[12]"]).match(boards)) == ["C0:98:E5:49:00:01", "C0:98:E5:49:00:02"])
        // Globs match addresses in any case, and aliases.
        #expect(addresses(try Selection(parsing: ["d0:*"]).match(boards)) == ["D0:00:00:00:00:03", "D0:00:00:00:00:04"])
        #expect(addresses(try Selection(parsing: ["l?b"]).match(boards)) == ["D0:00:00:00:00:03"])
    }

    @Test func listIsAUnionWithoutDuplicatesInFleetOrder() throws {
        let match = try Selection(parsing: ["lab", "nano-*", "C0:98:E5:49:00:01"]).match(boards)
        #expect(addresses(match) == ["C0:98:E5:49:00:01", "C0:98:E5:49:00:02", "D0:00:00:00:00:03"])
        #expect(match.unmatched.isEmpty)
    }

    @Test func reportsSelectorsThatMatchedNothing() throws {
        let match = try Selection(parsing: ["nano-01", "garage", "nano-9*", "AA:AA:AA:AA:AA:AA", "garage"]).match(boards)
        #expect(addresses(match) == ["C0:98:E5:49:00:01"])
        #expect(match.unmatched.map(\.description) == ["garage", "nano-9*", "AA:AA:AA:AA:AA:AA"])
    }
}
