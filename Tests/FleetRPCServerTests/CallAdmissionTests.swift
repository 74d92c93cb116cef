import JSONRPC
import Testing

@testable import FleetRPCServer

@Suite struct CallAdmissionTests {
    @Test func callsBeyondTheLimitAreRefusedAsBusyUntilOneFinishes() {
        var admission = CallAdmission(limit: 2)
        #expect(admission.admit() == .admitted)
        #expect(admission.admit() == .admitted)
        guard case .refused(let busy) = admission.admit() else {
            Issue.record("a third call was admitted with a limit of 2")
            return
        }
        #expect(busy.code == -32004)
        #expect(
            busy.message
                == "Busy: this connection already has 2 calls in flight; wait for replies or use another connection.")
        // A refused call took no place.
        #expect(admission.inFlight == 2)
        admission.finished()
        #expect(admission.admit() == .admitted)
        #expect(admission.inFlight == 2)
    }
}
