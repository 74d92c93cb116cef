// json-bench: what one JSON-RPC call costs in the one codec (Foundation's JSONDecoder and
// JSONEncoder), piece by piece: reading a request frame, writing a `daemon.status` reply
// (one adapter, 20 boards), a `led.set` reply for 20 boards. Mean per operation, warm.
//
// Measured 2026-11-23 (2 cores): reading the daemon.status request 6.8 µs, writing its reply
// 27.1 µs; the hand-written codec this replaced took 1.8 µs and 23.6 µs. Neither met the
// daemon.status round-trip goal on that machine (old 2.8×, new 4.9–6.9× a raw echo), so no
// hand-written piece was kept. Benchmarks/AsyncEcho shows why: the async server design
// alone, with no JSON, is 2.3–2.7× a raw echo here.
//
//   swift build -c release --product json-bench && .build/release/json-bench [ITERATIONS]
import FleetRPC
import JSONRPC
import Foundation

let iterations = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 20_000
let clock = ContinuousClock()

func measure(_ name: String, _ body: () throws -> Void) rethrows {
    for _ in 0..<200 { try body() }
    let elapsed = try clock.measure { for _ in 0..<iterations { try body() } }
    let micros = Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6
    print(String(format: "%-44@ %8.2f µs", name as NSString, micros / Double(iterations)))
}

let statusRequest = Array(#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#.utf8)
let ledRequest = Array(#"{"jsonrpc":"2.0","id":7,"method":"led.set","params":{"select":"all","on":true}}"#.utf8)
let status = DaemonStatus(
    version: "0.5.0", uptimeSeconds: 123.456, bluez: true, adapter: "hci0 (00:AA:01:00:00:01)", powered: true,
    discovering: false,
    adapters: [
        DaemonStatus.Adapter(
            name: "hci0", address: "00:AA:01:00:00:01", present: true, powered: true, discovering: false, slotsUsed: 20,
            slotsLimit: 20, boards: (1...20).map { String(format: "AA:BB:CC:DD:EE:%02X", $0) })
    ],
    boards: .init(known: 20, connected: 20, ready: 20), clients: 1)
let outcomes = FleetResult(outcomes: (1...20).map {
    BoardOutcome<Done>(
        address: BoardAddress(String(format: "AA:BB:CC:DD:EE:%02X", $0))!, name: "nano-\($0)", result: .success(Done()),
        latency: .milliseconds(12))
})

measure("read daemon.status request (RPCIncoming)") { _ = RPCIncoming(parsing: statusRequest) }
measure("read led.set request (RPCIncoming)") { _ = RPCIncoming(parsing: ledRequest) }
try measure("read led.set params (descriptor + Params)") {
    guard case .single(.request(let request)) = RPCIncoming(parsing: ledRequest) else { fatalError() }
    _ = try FleetMethods.LedSet.Params(checked: try FleetMethods.LedSet.descriptor.validate(request.params))
}
try measure("write daemon.status reply") { _ = try JSONCodec.encode(RPCReply(id: .int(1), outcome: .result(status))) }
try measure("write led.set reply, 20 boards") { _ = try JSONCodec.encode(RPCReply(id: .int(7), outcome: .result(outcomes))) }
let plain = JSONEncoder()
try measure("write daemon.status reply, keys unsorted") { _ = try plain.encode(RPCReply(id: .int(1), outcome: .result(status))) }
let statusReply = try JSONCodec.encode(RPCReply(id: .int(1), outcome: .result(status)))
try measure("read daemon.status reply, typed") {
    _ = try JSONCodec.decode(RPCTypedResponse<DaemonStatus>.self, from: statusReply)
}
try measure("read daemon.status reply as JSONValue") { _ = try JSONValue(parsing: statusReply) }
