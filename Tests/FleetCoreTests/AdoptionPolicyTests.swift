import Testing

@testable import FleetCore

@Suite struct AdoptionPolicyTests {
    let board = BoardIdentity(address: BoardAddress("C0:98:E5:49:00:01")!, name: "nano-01")

    @Test func autoAdoptsBoardsAdvertisingTheLEDService() {
        let policy = AdoptionPolicy()
        #expect(policy.shouldAdopt(board, ofKnownKind: true))
        #expect(!policy.shouldAdopt(board, ofKnownKind: false))
        #expect(!AdoptionPolicy(autoAdopt: false).shouldAdopt(board, ofKnownKind: true))
    }

    @Test func allowListRestrictsAdoption() throws {
        let policy = try AdoptionPolicy(allowing: ["c0:98:e5:*", "nano-77"])
        #expect(policy.shouldAdopt(board, ofKnownKind: true))
        #expect(policy.shouldAdopt(BoardIdentity(address: BoardAddress("02:00:00:00:00:01")!, name: "nano-77"), ofKnownKind: true))
        #expect(!policy.shouldAdopt(BoardIdentity(address: BoardAddress("02:00:00:00:00:01")!, name: "nano-01"), ofKnownKind: true))
        #expect(!policy.shouldAdopt(board, ofKnownKind: false))
        // With an allow-list, listed boards are adopted even when auto-adopt is off.
        let explicit = try AdoptionPolicy(autoAdopt: false, allowing: ["C0:98:E5:49:00:01"])
        #expect(explicit.shouldAdopt(board, ofKnownKind: true))
        #expect(throws: FleetError.self) { try AdoptionPolicy(allowing: ["[oops"]) }
    }
}
