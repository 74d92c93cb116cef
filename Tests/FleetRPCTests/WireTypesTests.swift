import Foundation
import Testing

@testable import FleetRPC
import JSONRPC

/// The fleet's values as the wire carries them: each type is the one the daemon's core uses
/// (FleetModel), and its JSON is the contract scripts rely on (`blefleet-rpc(7)`).
@Suite struct WireTypesTests {
    private func roundTrip<T: Codable & Equatable>(_ value: T) throws {
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(T.self, from: data) == value)
        // Read as a JSON value (blectl --json prints results so) and written again: the same value.
        let json = try JSONValue(parsing: data)
        #expect(try JSONDecoder().decode(T.self, from: Data(json.serialized())) == value)
    }

    private func json(_ value: some Encodable) throws -> JSONValue {
        try JSONValue(parsing: JSONEncoder().encode(value))
    }

    /// What a client writes is what the server reads: params encoded, checked against the
    /// method's descriptor (as the dispatcher does), then read back by the method's Params.
    private func paramsRoundTrip<Method: RPCMethod>(_ method: Method.Type, _ params: Method.Params) throws
    where Method.Params: Equatable {
        let json = try JSONValue(parsing: JSONCodec.encode(params))
        let members = try #require(json.objectValue, "params are written as an object")
        let checked = try Method.descriptor.validate(.byName(members))
        #expect(try Method.Params(checked: checked) == params)
    }

    private let a = BoardAddress("AA:BB:CC:DD:EE:01")!
    private let b = BoardAddress("AA:BB:CC:DD:EE:02")!
    private var board: BoardInfo {
        BoardInfo(
            address: a, name: "nano-01", alias: "lab-1", state: .ready, rssi: -60, led: true,
            temperature: TemperatureReading(value: Celsius(degrees: -5), age: .milliseconds(120)),
            lastSeen: "2024-05-01T12:00:00Z")
    }
    private let failure = FleetError(.notConnected, "The board is not connected.")

    private func outcome<Value>(_ address: BoardAddress, _ result: Result<Value, FleetError>, ms: Int, pending: Bool? = nil)
        -> BoardOutcome<Value>
    {
        BoardOutcome(address: address, name: address == a ? "a" : nil, result: result, latency: .milliseconds(ms), pending: pending)
    }

    @Test func everyResultTypeRoundTrips() throws {
        try roundTrip(board)
        try roundTrip(BoardInfo(address: b, name: "n", state: .absent))
        try roundTrip(BoardsListResult(boards: [board]))
        try roundTrip(FleetResult(outcomes: [outcome(a, .success(Done()), ms: 12), outcome(b, .failure(failure), ms: 3000, pending: true)]))
        try roundTrip(FleetResult(outcomes: [
            outcome(a, .success(TemperatureReading(value: Celsius(degrees: -12), age: .zero)), ms: 40),
            outcome(b, .failure(failure), ms: 1),
        ]))
        try roundTrip(FleetResult(outcomes: [outcome(a, .success(GattBytes([0x01, 0xff])), ms: 4)]))
        try roundTrip(FleetResult(outcomes: [
            outcome(a, .success(SensorValue(sensor: "humidity", value: 45.67, unit: "%", age: .milliseconds(900))), ms: 4)
        ], unmatched: [.name("kitchen")]))
        try roundTrip(EventsSubscriptionResult(topics: [.boards, .temperature]))
        try roundTrip(
            DaemonStatus(
                version: "1.0", uptimeSeconds: 12.5, bluez: true, adapter: "hci0", powered: true, discovering: false,
                boards: .init(known: 3, connected: 2, ready: 1), clients: 4))
        try roundTrip(EventNotification(topic: .led, address: "A", time: "2024-05-01T12:00:00Z", data: ["on": true]))
        for code in FleetErrorCode.allCases {
            try roundTrip(FleetError(code, "m"))
        }
    }

    /// The JSON of an outcome is the one scripts match on: the outcome's fields, and the
    /// value's own beside them when ok.
    @Test func outcomesAreWrittenAsTheContractSays() throws {
        let led = try json(FleetResult(outcomes: [
            outcome(a, .success(Done()), ms: 12), outcome(b, .failure(FleetError(.absent, "gone")), ms: 3000, pending: true),
        ]))
        #expect(led == [
            "results": [
                ["address": "AA:BB:CC:DD:EE:01", "name": "a", "ok": true, "latencyMs": 12],
                [
                    "address": "AA:BB:CC:DD:EE:02", "name": "", "ok": false, "latencyMs": 3000, "pending": true,
                    "error": ["code": "absent", "message": "gone", "retryable": true],
                ],
            ],
            "totals": ["ok": 1, "failed": 1],
        ])
        let temperature = try json(FleetResult(outcomes: [
            outcome(a, .success(TemperatureReading(value: Celsius(degrees: -3), age: .milliseconds(1500))), ms: 7)
        ]))
        #expect(temperature["results"]?.arrayValue?[0] == [
            "address": "AA:BB:CC:DD:EE:01", "name": "a", "ok": true, "latencyMs": 7, "celsius": -3, "ageMs": 1500,
        ])
        let sensor = try json(FleetResult(outcomes: [
            outcome(a, .success(SensorValue(sensor: "humidity", value: 45.5, unit: "%", age: .zero)), ms: 7)
        ], unmatched: [.glob(try GlobPattern("lab-*"))]))
        #expect(sensor["results"]?.arrayValue?[0]["sensor"] == "humidity" && sensor["results"]?.arrayValue?[0]["value"] == 45.5)
        #expect(sensor["results"]?.arrayValue?[0]["unit"] == "%" && sensor["results"]?.arrayValue?[0]["ageMs"] == 0)
        #expect(sensor["unmatched"] == ["lab-*"])
        let gatt = try json(FleetResult(outcomes: [outcome(a, .success(GattBytes([0x0a, 0xff])), ms: 7)]))
        #expect(gatt["results"]?.arrayValue?[0]["value"] == "0aff")
    }

    @Test func everyParamsTypeRoundTrips() throws {
        try paramsRoundTrip(FleetMethods.LedSet.self, .init(select: .all, on: true, timeoutMs: 500))
        try paramsRoundTrip(FleetMethods.LedSet.self, .init(select: try Selection(parsing: ["nano-0*", "AA:BB:CC:DD:EE:01"]), on: false))
        try paramsRoundTrip(FleetMethods.TemperatureRead.self, .init(select: try Selection(parsing: ["lab-*"]), maxAgeMs: 1000))
        try paramsRoundTrip(FleetMethods.BoardsList.self, .init())
        try paramsRoundTrip(FleetMethods.BoardsList.self, .init(select: try Selection(parsing: ["lab-1"])))
        try paramsRoundTrip(FleetMethods.BoardsScan.self, .init(seconds: 2.5))
        try paramsRoundTrip(FleetMethods.BoardsConnect.self, BoardSelectParams(select: try Selection(parsing: ["a", "b"])))
        try paramsRoundTrip(FleetMethods.BoardsAlias.self, .init(address: a, alias: "lab-1"))
        try paramsRoundTrip(FleetMethods.GattRead.self, .init(address: a, service: "180f", characteristic: "2a19"))
        try paramsRoundTrip(
            FleetMethods.GattWrite.self,
            .init(select: .all, service: "180f", characteristic: "2a19", value: [0x01], withResponse: false))
        try paramsRoundTrip(FleetMethods.GattNotify.self, .init(select: .all, service: "180f", characteristic: "2a19"))
        try paramsRoundTrip(FleetMethods.EventsSubscribe.self, EventsSubscribeParams(topics: [.adapter]))
        try paramsRoundTrip(FleetMethods.EventsUnsubscribe.self, EventsSubscribeParams())
        try paramsRoundTrip(FleetMethods.DaemonStatus.self, RPCNoParams())
    }

    @Test func typedParametersAreReadOnceIntoTheirTypes() throws {
        let params = try FleetMethods.GattWrite.descriptor.validate(
            .byName(["address": "aa:bb:cc:dd:ee:01", "service": "180f", "characteristic": "2a19", "value": "0aFF"]))
        let read = try FleetMethods.GattWrite.Params(checked: params)
        #expect(read.address == a && read.boards == Selection([.address(a)]))
        #expect(read.value == [0x0a, 0xff])
        #expect(throws: RPCError.self) {
            try FleetMethods.GattWrite.descriptor.validate(
                .byName(["address": "aa:bb", "service": "180f", "characteristic": "2a19", "value": "01"]))
        }
    }

    @Test func hexBytesConvertBothWays() {
        #expect(HexBytes.decode("0aFF") == [0x0A, 0xFF])
        #expect(HexBytes.decode("") == [])
        #expect(HexBytes.decode("abc") == nil)
        #expect(HexBytes.decode("zz") == nil)
        #expect(HexBytes.encode([0x00, 0xFB]) == "00fb")
    }
}

extension JSONValue {
    /// JSONEncoder writes 12.0 as 12, which parses as an integer: compare numbers by value.
    var integralDoublesAsInts: JSONValue {
        switch self {
        case .double(let value) where value.rounded() == value && abs(value) < 1e15: .int(Int64(value))
        case .array(let elements): .array(elements.map(\.integralDoublesAsInts))
        case .object(let members): .object(members.mapValues(\.integralDoublesAsInts))
        default: self
        }
    }
}
