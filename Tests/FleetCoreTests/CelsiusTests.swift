import Testing

@testable import FleetCore

@Suite struct CelsiusTests {
    @Test(arguments: [(UInt8(0x00), 0), (0x19, 25), (0x7F, 127), (0xFB, -5), (0xFF, -1), (0x80, -128)])
    func decodesTheByteAsSignedInt8(_ byte: UInt8, _ degrees: Int) {
        #expect(Celsius(rawByte: byte).degrees == degrees)
    }

    @Test func valueMustBeExactlyOneByte() throws {
        #expect(try Celsius(value: [0xFB]) == Celsius(degrees: -5))
        #expect(throws: FleetError(.gattError, "The temperature value has 0 bytes; the board sends exactly 1.")) {
            try Celsius(value: [UInt8]())
        }
        #expect(throws: FleetError.self) { try Celsius(value: [0x01, 0x02]) }
    }

    @Test func describesWithUnit() {
        #expect(Celsius(degrees: -5).description == "-5 °C")
    }
}
