import Testing

@testable import BlueZ

@Suite struct ManagementInterfaceTests {
    @Test func aDisconnectRequestIsTheKernelsPacket() throws {
        // doc/mgmt-api.txt: Disconnect, opcode 0x0014, controller index, parameters
        // Address (6 octets, least significant first) and Address_Type (2: LE random).
        let address = try #require(ManagementInterface.addressBytes("C0:FF:EE:00:00:3A"))
        let packet = ManagementInterface.Packet(code: 0x0014, index: 2, parameters: address + [2])
        #expect(packet.bytes == [0x14, 0x00, 0x02, 0x00, 0x07, 0x00, 0x3a, 0x00, 0x00, 0xee, 0xff, 0xc0, 0x02])
        #expect(ManagementInterface.Packet(packet.bytes) == packet)
    }

    @Test func theAnswerIsTheCommandCompleteOrStatusOfItsOpcode() throws {
        // Command Complete (0x0001): opcode, status, then the command's return parameters.
        let complete = try #require(ManagementInterface.Packet([0x01, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x14, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 1]))
        #expect(complete.status(answering: 0x0014) == 0)
        #expect(complete.status(answering: 0x0015) == nil)
        // Command Status (0x0002) for a link that is not up: Not Connected.
        let status = try #require(ManagementInterface.Packet([0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x14, 0x00, 0x02]))
        #expect(status.status(answering: 0x0014) == ManagementInterface.Failure.notConnected)
        // An event for everyone (Device Disconnected, 0x000C) answers nothing.
        let event = try #require(ManagementInterface.Packet([0x0c, 0x00, 0x00, 0x00, 0x03, 0x00, 0x14, 0x00, 0x00]))
        #expect(event.status(answering: 0x0014) == nil)
        // A packet whose length field disagrees with its size is not one.
        #expect(ManagementInterface.Packet([0x01, 0x00, 0x00, 0x00, 0x09, 0x00, 0x14]) == nil)
    }

    @Test func addressesThatAreNotSixHexPairsAreRefused() {
        #expect(ManagementInterface.addressBytes("C0:FF:EE:00:00") == nil)
        #expect(ManagementInterface.addressBytes("C0:FF:EE:00:00:ZZ") == nil)
        #expect(ManagementInterface.addressBytes("C0:FF:EE:00:00:3A:01") == nil)
    }

    @Test func aMissingRelayIsUnavailableInWords() async {
        let interface = ManagementInterface(.relay(path: "/nonexistent/blefleet-mgmt.sock"))
        do {
            try await interface.disconnect(controller: 0, address: "C0:FF:EE:00:00:3A", type: .lePublic)
            Issue.record("a disconnect through a missing relay succeeded")
        } catch {
            #expect(error.interfaceUnavailable)
            #expect("\(error)".hasPrefix("the kernel's Bluetooth management interface is not available: the relay /nonexistent/blefleet-mgmt.sock: "))
        }
    }

    @Test func controllerIndexesComeFromAdapterPaths() {
        #expect(BlueZClient.controllerIndex("/org/bluez/hci0") == 0)
        #expect(BlueZClient.controllerIndex("/org/bluez/hci12") == 12)
        #expect(BlueZClient.controllerIndex("/org/bluez") == nil)
    }
}

@Suite struct RSSITests {
    @Test func noneAndNotAvailableAreNoSignal() {
        // bluetoothd's "none" (0) and HCI's "not available" (127, what btvirt reports).
        #expect(BlueZDevice.usableRSSI(0) == nil)
        #expect(BlueZDevice.usableRSSI(127) == nil)
        #expect(BlueZDevice.usableRSSI(nil) == nil)
        #expect(BlueZDevice.usableRSSI(-61) == -61)
        let advert = BlueZMirrorEvent.propertiesChanged(
            path: "/org/bluez/hci0/dev_C0_FF_EE_00_00_01", interface: "org.bluez.Device1", changed: ["RSSI": .int16(127)],
            invalidated: [])
        #expect(advert.advertisement?.path == "/org/bluez/hci0/dev_C0_FF_EE_00_00_01")
        #expect(advert.advertisement?.rssi == nil)
    }
}
