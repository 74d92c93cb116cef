import FleetCore
import FleetRPC
import FleetRPCServer
import Testing

/// The fleet's vocabulary exists twice: in FleetCore (what the daemon does) and in FleetRPC
/// (what the wire says, shared with blectl, which does not link FleetCore). One mapping
/// joins them; these tests keep the two from drifting: every word has its twin, with the
/// same wire name, both ways.
@Suite struct VocabularyTests {
    @Test func everyBoardPhaseIsABoardStateOfTheSameNameAndBack() {
        let mapped = BoardPhase.allCases.map { BoardState($0) }
        for (phase, state) in zip(BoardPhase.allCases, mapped) {
            #expect(phase.rawValue == state.rawValue)
        }
        #expect(Set(mapped) == Set(BoardState.allCases), "a wire state no phase produces")
    }

    @Test func everyFleetErrorCodeIsABoardErrorCodeOfTheSameNameAndBack() {
        let mapped = FleetErrorCode.allCases.map { BoardError(FleetError($0, "m")).code }
        for (code, wire) in zip(FleetErrorCode.allCases, mapped) {
            #expect(code.rawValue == wire.rawValue)
        }
        // blefleet-rpc(7) lists these as reserved: clients may meet them from a later daemon.
        let reserved: Set<BoardErrorCode> = [.notSupported, .connectFailed, .internalError]
        #expect(Set(mapped).isDisjoint(with: reserved))
        #expect(Set(mapped).union(reserved) == Set(BoardErrorCode.allCases), "a wire error code no fleet error produces")
    }
}
