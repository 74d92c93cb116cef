import BlueZ
import Testing

@testable import FleetCore

@Suite struct FleetErrorCodeTests {
    @Test func wireNamesAreStable() {
        // blefleet-rpc(7)'s table, in its order; not-supported, connect-failed and internal
        // are reserved (no daemon of this version says them, a later one may).
        #expect(FleetErrorCode.allCases.map(\.rawValue) == [
            "absent", "timeout", "not-connected", "gatt-error", "adapter-off", "bluez-unavailable", "busy",
            "not-supported", "connect-failed", "internal", "not-found", "cancelled", "invalid-argument", "failed",
            "limit-reached",
        ])
    }

    @Test func retryableCodes() {
        let retryable = FleetErrorCode.allCases.filter(\.retryable)
        #expect(
            retryable == [.absent, .timeout, .notConnected, .gattError, .adapterOff, .bluezUnavailable, .busy, .connectFailed])
        #expect(FleetError(.failed, "Not permitted.").retryable == false)
        #expect(FleetError(.timeout, "Too slow.").description == "timeout: Too slow.")
    }

    @Test func aBoardsATTErrorIsSaidInWords() throws {
        let board = try #require(BoardAddress("CA:FE:00:00:00:01"))
        let refused = FleetError(gatt: .attError(0x03, "Operation failed with ATT error: 0x03"), board: board)
        #expect(refused.code == .gattError)
        #expect(refused.message == "CA:FE:00:00:00:01 refused the GATT request (the GATT request failed with ATT error 0x03: write not permitted).")
        // A link that is already known lost is not the board's answer.
        #expect(FleetError(gatt: .notConnected("Not connected"), board: board).code == .notConnected)
        // How connects that end so are retried: a board's refusal is not retried as if transient.
        #expect(ConnectErrorClass(BlueZError.attError(0x03, "")) == .permanent)
        #expect(ConnectErrorClass(BlueZError.attError(0x0e, "")) == .transient)
    }
}
