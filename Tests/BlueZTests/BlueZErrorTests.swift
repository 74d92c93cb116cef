import BlueZ
import Testing

@Suite struct BlueZErrorTests {
    @Test func parsesConnectionFailureReasons() {
        let error = BlueZError(dbusName: "org.bluez.Error.Failed", message: "le-connection-abort-by-local")
        #expect(error == .connectionFailed(.abortByLocal, "le-connection-abort-by-local"))
        #expect(error.isRetryable)
        let unknown = BlueZError(dbusName: "org.bluez.Error.Failed", message: "le-connection-something-new")
        #expect(unknown == .connectionFailed(.leUnknown, "le-connection-something-new"))
    }

    @Test func genericFailedIsNotAConnectionFailure() {
        #expect(BlueZError(dbusName: "org.bluez.Error.Failed", message: "Operation failed") == .failed("Operation failed"))
    }

    @Test func aGattOperationOnALinkThatWentIsNotConnected() {
        // What bluetoothd's gatt-client answers once the link is down.
        #expect(BlueZError(dbusName: "org.bluez.Error.Failed", message: "Not connected") == .notConnected("Not connected"))
    }

    @Test func aGattRequestEndedByAnATTErrorKeepsItsCode() {
        // What real bluetoothd 5.66 answers a write or read whose link is lost during the call.
        let lost = BlueZError(dbusName: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x0e")
        #expect(lost == .attError(0x0e, "Operation failed with ATT error: 0x0e"))
        #expect(lost.mayMeanLinkLoss)
        #expect(lost.isRetryable)
        #expect(lost.description == "the GATT request failed with ATT error 0x0e")
        // A board's own refusal is its answer, whatever the link does.
        let refused = BlueZError(dbusName: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x80")
        #expect(refused == .attError(0x80, "Operation failed with ATT error: 0x80"))
        #expect(!refused.mayMeanLinkLoss)
        #expect(!refused.isRetryable)
        #expect(!BlueZError(dbusName: "org.bluez.Error.NotPermitted", message: "Write not permitted").mayMeanLinkLoss)
    }

    @Test(arguments: [
        ("org.bluez.Error.InProgress", true),
        ("org.bluez.Error.NotPermitted", false),
        ("org.bluez.Error.NotAuthorized", false),
        ("org.bluez.Error.InvalidValueLength", false),
        ("org.bluez.Error.NotReady", true),
        ("org.freedesktop.DBus.Error.UnknownObject", true),
        ("org.freedesktop.DBus.Error.ServiceUnknown", true),
        ("org.freedesktop.DBus.Error.NoReply", true),
        ("org.freedesktop.DBus.Error.Disconnected", false),
    ])
    func retryability(name: String, retryable: Bool) {
        #expect(BlueZError(dbusName: name, message: "m").isRetryable == retryable)
    }

    @Test func mapsBusErrorsToCases() {
        #expect(BlueZError(dbusName: "org.freedesktop.DBus.Error.UnknownObject", message: "x") == .objectVanished("x"))
        #expect(BlueZError(dbusName: "org.freedesktop.DBus.Error.ServiceUnknown", message: "x") == .serviceUnavailable("x"))
        #expect(BlueZError(dbusName: "org.freedesktop.DBus.Error.NoReply", message: "x") == .timeout("x"))
        #expect(BlueZError(dbusName: "com.example.Weird", message: "x") == .other(name: "com.example.Weird", message: "x"))
    }

    @Test func descriptionsAreSentences() {
        let error = BlueZError(dbusName: "org.bluez.Error.Failed", message: "le-connection-abort-by-local")
        #expect(error.description == "connection failed (le-connection-abort-by-local)")
        #expect(!BlueZError.serviceUnavailable("gone").description.contains("org.freedesktop"))
    }
}
