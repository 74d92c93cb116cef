import FleetCore
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
