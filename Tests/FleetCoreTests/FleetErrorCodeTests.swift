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
}
