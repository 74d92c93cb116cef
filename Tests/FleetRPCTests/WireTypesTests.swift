import Foundation
import Testing

@testable import FleetRPC
import JSONRPC

@Suite struct WireTypesTests {
    private func roundTrip<T: Codable & Equatable>(_ value: T) throws {
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(T.self, from: data) == value)
        // Read as a JSON value (blectl --json prints results so) and written again: the same value.
        let json = try JSONValue(parsing: data)
        #expect(try JSONDecoder().decode(T.self, from: Data(json.serialized())) == value)
    }

    /// What a client writes is what the server reads: params encoded, checked against the
    /// method's descriptor (as the dispatcher does), then read back by the method's Params.
    private func paramsRoundTrip<Method: RPCMethod>(_ method: Method.Type, _ params: Method.Params) throws
    where Method.Params: Equatable {
        let json = try JSONValue(parsing: JSONCodec.encode(params))
        let members = try #require(json.objectValue, "params are written as an object")
        let checked = try Method.descriptor.validate(.byName(members))
        #expect(try Method.Params(checked: RPCCheckedParams(checked)) == params)
    }

    private let board = BoardInfo(
        address: "AA:BB:CC:DD:EE:01", name: "nano-01", alias: "lab-1", state: .ready, rssi: -60, led: true,
        temperature: TemperatureReading(celsius: -5, ageMs: 120), lastSeen: "2024-05-01T12:00:00Z")
    private let failure = BoardError(code: .notConnected, message: "The board is not connected.", retryable: true)

    @Test func everyResultTypeRoundTrips() throws {
        try roundTrip(board)
        try roundTrip(BoardInfo(address: "AA:BB:CC:DD:EE:02", name: "n", state: .absent))
        try roundTrip(BoardsListResult(boards: [board]))
        try roundTrip(FleetResult(results: [
            BoardOutcome(address: "A", name: "a", ok: true, latencyMs: 12),
            BoardOutcome(address: "B", name: "b", ok: false, error: failure, latencyMs: 3000),
        ]))
        try roundTrip(FleetResult(results: [
            TemperatureOutcome(address: "A", name: "a", ok: true, celsius: -12, ageMs: 0, latencyMs: 40),
            TemperatureOutcome(address: "B", name: "b", ok: false, error: failure, latencyMs: 1),
        ]))
        try roundTrip(FleetResult(results: [GattOutcome(address: "A", name: "a", ok: true, value: "01ff", latencyMs: 4)]))
        try roundTrip(EventsSubscriptionResult(topics: [.boards, .temperature]))
        try roundTrip(
            DaemonStatus(
                version: "1.0", uptimeSeconds: 12.5, bluez: true, adapter: "hci0", powered: true, discovering: false,
                boards: .init(known: 3, connected: 2, ready: 1), clients: 4))
        try roundTrip(EventNotification(topic: .led, address: "A", time: "2024-05-01T12:00:00Z", data: ["on": true]))
        for code in BoardErrorCode.allCases {
            try roundTrip(BoardError(code: code, message: "m", retryable: false))
        }
    }

    @Test func everyParamsTypeRoundTrips() throws {
        try paramsRoundTrip(FleetMethods.LedSet.self, .init(select: .all, on: true, timeoutMs: 500))
        try paramsRoundTrip(FleetMethods.LedSet.self, .init(select: .patterns(["nano-0*", "AA:BB:CC:DD:EE:01"]), on: false))
        try paramsRoundTrip(FleetMethods.TemperatureRead.self, .init(select: .patterns(["lab-*"]), maxAgeMs: 1000))
        try paramsRoundTrip(FleetMethods.BoardsList.self, .init())
        try paramsRoundTrip(FleetMethods.BoardsList.self, .init(select: .patterns(["lab-1"])))
        try paramsRoundTrip(FleetMethods.BoardsScan.self, .init(seconds: 2.5))
        try paramsRoundTrip(FleetMethods.BoardsConnect.self, BoardSelectParams(select: .patterns(["a", "b"])))
        try paramsRoundTrip(FleetMethods.BoardsAlias.self, .init(address: "AA:BB:CC:DD:EE:01", alias: "lab-1"))
        try paramsRoundTrip(
            FleetMethods.GattRead.self, .init(address: "AA:BB:CC:DD:EE:01", service: "180f", characteristic: "2a19"))
        try paramsRoundTrip(
            FleetMethods.GattWrite.self,
            .init(select: .all, service: "180f", characteristic: "2a19", value: "01", withResponse: false))
        try paramsRoundTrip(
            FleetMethods.GattNotify.self, .init(select: .all, service: "180f", characteristic: "2a19"))
        try paramsRoundTrip(FleetMethods.EventsSubscribe.self, EventsSubscribeParams(topics: [.adapter]))
        try paramsRoundTrip(FleetMethods.EventsUnsubscribe.self, EventsSubscribeParams())
        try paramsRoundTrip(FleetMethods.DaemonStatus.self, RPCNoParams())
    }

    @Test func fleetResultTotalsAreCounted() throws {
        let result = FleetResult(results: [
            BoardOutcome(address: "A", name: "a", ok: true, latencyMs: 1),
            BoardOutcome(address: "B", name: "b", ok: false, error: failure, latencyMs: 1),
            BoardOutcome(address: "C", name: "c", ok: false, error: failure, latencyMs: 1),
        ])
        #expect(result.totals == FleetTotals(ok: 1, failed: 2))
        let json = try JSONValue(parsing: JSONEncoder().encode(result))
        #expect(json["totals"] == ["ok": 1, "failed": 2])
        #expect(json["results"]?.arrayValue?[1]["error"]?["code"] == "not-connected")
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
