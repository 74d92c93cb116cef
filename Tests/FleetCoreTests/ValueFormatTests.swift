import FleetCore
import Foundation
import Testing

@Suite struct ValueFormatTests {
    @Test func decodesLittleEndianValuesOfEveryFormat() {
        #expect(ValueFormat.sint8.decode([0xFB]) == -5)
        #expect(ValueFormat.uint8.decode([0xFB]) == 251)
        #expect(ValueFormat.int16.decode([0x18, 0xFC]) == -1000)
        #expect(ValueFormat.uint16.decode([0xB9, 0x0F]) == 4025)
        #expect(ValueFormat.int32.decode([0xFF, 0xFF, 0xFF, 0xFF]) == -1)
        #expect(ValueFormat.float32.decode([0x00, 0x00, 0x80, 0x3F]) == 1.0)
        // The wrong number of bytes is no value.
        #expect(ValueFormat.uint16.decode([0x01]) == nil)
        #expect(ValueFormat.sint8.decode([0x01, 0x02]) == nil)
    }

    @Test func encodesWhatItDecodesAndRefusesWhatDoesNotFit() {
        for format in ValueFormat.allCases {
            for value in [0.0, 1, 100] {
                let bytes = format.encode(value)
                #expect(bytes?.count == format.size, "\(format) \(value)")
                #expect(bytes.flatMap(format.decode) == value, "\(format) \(value)")
            }
        }
        #expect(ValueFormat.uint8.encode(256) == nil)
        #expect(ValueFormat.uint16.encode(-1) == nil)
        #expect(ValueFormat.sint8.encode(-128) == [0x80])
        #expect(ValueFormat.float32.encode(.nan) == nil)
    }

    @Test func theBuiltInProfileIsTheNanoSketch() throws {
        let nano = BoardProfile.nano
        let led = try #require(nano.switch(named: "led"))
        #expect(led.encode(on: true) == [1])
        #expect(led.encode(on: false) == [0])
        let temperature = try #require(nano.sensor(named: "temperature"))
        #expect(temperature.decode([0xFB]) == -5)
        #expect(temperature.unit == "°C")
        #expect(nano.advertisedService.uuidString == "cd48409a-f3cc-11ed-a05b-0242ac120003")
    }

    @Test func aFileProfileForTheBuiltInServiceReplacesIt() {
        let humid = BoardProfile(
            name: "lab", advertisedService: BoardProfile.nano.advertisedService,
            characteristics: BoardProfile.nano.characteristics, source: "lab.yaml")
        let catalog = ProfileCatalog(files: [humid])
        #expect(catalog.profiles.map(\.name) == ["lab"])
        #expect(ProfileCatalog.builtIn.profiles.map(\.name) == ["nano"])
    }
}

/// A scaled value carries the decimals its scale implies, exactly: what the JSON of
/// `sensor.read` and every table and file then show.
@Suite struct ScaledValueTests {
    static func sensor(_ format: ValueFormat, scale: Double) -> BoardProfile.Characteristic {
        BoardProfile.Characteristic(
            name: "pressure", role: .sensor, service: GattUUID("d888a9c2-f3cc-11ed-a05b-0242ac120003")!,
            uuid: GattUUID("d888a9c9-f3cc-11ed-a05b-0242ac120003")!, format: format, scale: scale, access: [.read])
    }

    @Test func aScaleOfTenthsGivesTheValueToOneDecimalExactly() throws {
        let pressure = Self.sensor(.uint16, scale: 0.1)
        #expect(pressure.decimals == 1)
        let value = try #require(pressure.decode(ValueFormat.uint16.encode(10013)!))
        #expect(value == 1001.3)
        #expect("\(value)" == "1001.3", "not 10013 × 0.1 = 1001.3000000000001")
        let json = try JSONEncoder().encode(["value": value])
        #expect(String(decoding: json, as: UTF8.self) == #"{"value":1001.3}"#)
    }

    @Test(arguments: [(0.01, 2), (0.25, 2), (1.0, 0), (10.0, 0), (0.001, 3), (0.5, 1), (0.0625, 4)])
    func theDecimalsAreTheScales(scale: Double, decimals: Int) {
        #expect(Self.sensor(.int16, scale: scale).decimals == decimals)
    }

    @Test func everyHundredthOfAnInt16ReadsAsItsDecimalText() {
        let humidity = Self.sensor(.int16, scale: 0.01)
        for raw in stride(from: -32768, through: 32767, by: 7) {
            let value = humidity.decode(ValueFormat.int16.encode(Double(raw))!)!
            let sign = raw < 0 ? "-" : ""
            let digits = String(abs(raw)).count < 3 ? String(repeating: "0", count: 3 - String(abs(raw)).count) + String(abs(raw)) : String(abs(raw))
            var text = "\(sign)\(digits.dropLast(2)).\(digits.suffix(2))"
            // Swift writes the shortest text that reads back: trailing zeros go.
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text += "0" }
            #expect("\(value)" == text, "\(raw)")
        }
    }

    @Test func aFloatKeepsItsOwnDigits() {
        let float = Self.sensor(.float32, scale: 1)
        #expect(float.decimals == nil)
        #expect(float.decode(ValueFormat.float32.encode(45.67)!) == Double(Float(45.67)))
    }
}
