import BlueZ
import FleetModel
import Testing

@testable import FleetCore

/// A device's ATT error reaches a client with its code (bleak's BleakGATTProtocolError has
/// it): bluetoothd names some errors instead of giving their code (src/gatt-client.c,
/// `create_gatt_dbus_error`); those are read back into the code.
@Suite struct DeviceErrorTests {
    static let address = BoardAddress("CA:FE:00:00:00:03")!

    @Test(arguments: [
        (BlueZError.notPermitted("Read not permitted"), UInt8(0x02)),
        (.notPermitted("Write not permitted"), 0x03),
        (.notPermitted("Not paired"), 0x05),
        (.notSupported("Operation is not supported"), 0x06),
        (.invalidArguments("Invalid offset"), 0x07),
        (.notAuthorized("Operation Not Authorized"), 0x08),
        (.invalidArguments("Invalid Length"), 0x0d),
        (.attError(0x0e, "Operation failed with ATT error: 0x0e"), 0x0e),
        (.attError(0x80, "Operation failed with ATT error: 0x80"), 0x80),
    ])
    func anATTErrorKeepsItsCode(error: BlueZError, code: UInt8) {
        let device = DeviceError(gatt: error, address: Self.address)
        #expect(device.attError == code)
        #expect(device.code == .gattError)
        #expect(device.message.contains("CA:FE:00:00:00:03 refused the GATT request"))
        #expect(device.message.contains("ATT error 0x\(String(code, radix: 16))"))
    }

    @Test func otherFailuresHaveNoATTCode() {
        let lost = DeviceError(gatt: .notConnected("Not connected"), address: Self.address)
        #expect(lost.attError == nil)
        #expect(lost.code == .notConnected)
        #expect(DeviceError(gatt: .timeout("no reply"), address: Self.address).code == .timeout)
    }
}
