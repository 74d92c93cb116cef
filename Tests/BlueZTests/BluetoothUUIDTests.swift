import BlueZ
import Testing

@Suite struct BluetoothUUIDTests {
    @Test func shortFormsExpandOntoTheBaseUUID() {
        #expect(BluetoothUUID("FFE1")?.uuidString == "0000ffe1-0000-1000-8000-00805f9b34fb")
        #expect(BluetoothUUID("0xffe1") == BluetoothUUID("0000FFE1-0000-1000-8000-00805F9B34FB"))
        #expect(BluetoothUUID("0000ffe1")?.uuidString == "0000ffe1-0000-1000-8000-00805f9b34fb")
    }

    @Test func fullUUIDsAreLowercased() {
        #expect(BluetoothUUID("CD48409A-F3CC-11ED-A05B-0242AC120003")?.uuidString == "cd48409a-f3cc-11ed-a05b-0242ac120003")
    }

    @Test(arguments: ["", "xyz", "12345", "cd48409a-f3cc-11ed-a05b-0242ac12000", "cd48409af3cc11eda05b0242ac120003zz", "gggg",
                     "cd48409a-f3cc-11ed-a05b0-242ac120003", "0x", "0xfff", "ｆｆｅ１", "ffé1"])
    func rejectsMalformed(text: String) {
        #expect(BluetoothUUID(text) == nil)
    }
}
