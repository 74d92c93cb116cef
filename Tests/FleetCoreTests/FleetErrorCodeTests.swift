import BlueZ
import Testing

@testable import FleetCore

@Suite struct FleetErrorCodeTests {
    @Test func wireNamesAreStable() {
        #expect(FleetErrorCode.allCases.map(\.rawValue) == [
            "absent", "timeout", "not-connected", "gatt-error", "adapter-off", "bluez-unavailable",
            "not-found", "busy", "cancelled", "invalid-argument", "failed",
        ])
    }

    @Test func retryableCodes() {
        let retryable = FleetErrorCode.allCases.filter(\.retryable)
        #expect(retryable == [.absent, .timeout, .notConnected, .gattError, .adapterOff, .bluezUnavailable, .busy])
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
