import FleetRPC
import JSONRPC
import FleetRPCServer
import Foundation
import Testing

/// A seeded mutator run over the dispatcher: no crash, every reply valid JSON-RPC 2.0.
@Suite struct DispatcherFuzzTests {
    /// SplitMix64: small, fast, reproducible.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let corpus: [String] = [
        #"{"jsonrpc": "2.0", "method": "test.subtract", "params": [42, 23], "id": 1}"#,
        #"{"jsonrpc": "2.0", "method": "test.subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#,
        #"{"jsonrpc": "2.0", "method": "test.update", "params": [1,2,3,4,5]}"#,
        #"{"jsonrpc": "2.0", "method": "test.get_data", "id": "9"}"#,
        #"[{"jsonrpc": "2.0", "method": "test.sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method": "test.notify_hello", "params": [7]},{"foo": "boo"}]"#,
        #"{"jsonrpc":"2.0","method":"test.typed","params":{"select":["lab-*","AA:BB:CC:DD:EE:FF"],"on":true},"id":1.50}"#,
        #"{"jsonrpc":"2.0","method":"test.fail_internal","id":"é😀"}"#,
        #"{"jsonrpc":"2.0","method":"rpc.discover","id":12345678901234567890}"#,
        #"{"jsonrpc":"2.0","method":"test.fail_convertible","id":null}"#,
        #"{"jsonrpc":"2.0","method":"test.sum","params":{"a":-1,"b":2.0e0,"c":null},"id":-7}"#,
    ]

    static let structural: [UInt8] = Array(#"{}[]",:\0123456789-.eE tfn"#.utf8) + [0x00, 0x0A, 0xC3, 0xFF, 0xED, 0xF0]

    static func mutate(_ input: [UInt8], _ random: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            guard !bytes.isEmpty else { break }
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<7, using: &random) {
            case 0: bytes[at] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            case 1: bytes.insert(structural.randomElement(using: &random)!, at: at)
            case 2: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...8, using: &random)))
            case 3: bytes = Array(bytes[..<at])
            case 4:
                let end = min(bytes.count, at + Int.random(in: 1...16, using: &random))
                bytes.insert(contentsOf: bytes[at..<end], at: at)
            case 5: bytes[at] = UInt8.random(in: 0...255, using: &random)
            default:
                let other = Array(corpus.randomElement(using: &random)!.utf8)
                let cut = Int.random(in: 0..<other.count, using: &random)
                bytes = Array(bytes[..<at]) + other[cut...]
            }
        }
        return bytes
    }

    @Test func mutatedFramesNeverCrashAndGetValidReplies() async throws {
        let dispatcher = TestCatalogue.makeDispatcher()
        let (connection, _) = makeConnection()
        var random = SeededGenerator(state: 0x5EED_B1EF)
        let knownCodes = Set(RPCErrorCode.allCases.map { $0.rawValue })
        var replies = 0
        var errors = 0
        for iteration in 0..<20_000 {
            let frame = Self.mutate(Array(Self.corpus[iteration % Self.corpus.count].utf8), &random)
            let request = RPCIncoming(parsing: frame)
            guard let reply = await dispatcher.handle(frame: frame, connection: connection) else {
                // Only notifications go unanswered.
                switch request {
                case .single(.request(let single)): #expect(single.isNotification)
                case .batch(let items):
                    #expect(items.allSatisfy { if case .request(let r) = $0 { return r.isNotification } else { return false } })
                default: Issue.record("no reply to \(String(decoding: frame, as: UTF8.self))")
                }
                continue
            }
            replies += 1
            // Foundation agrees the reply is JSON.
            #expect((try? JSONSerialization.jsonObject(with: Data(reply), options: [.fragmentsAllowed])) != nil)
            let responses: [RPCResponse]
            if let batch = try? JSONDecoder().decode([RPCResponse].self, from: Data(reply)) {
                responses = batch
            } else {
                responses = [try JSONDecoder().decode(RPCResponse.self, from: Data(reply))]
            }
            for response in responses {
                if let error = response.error {
                    errors += 1
                    #expect(knownCodes.contains(error.code), "unknown code \(error.code)")
                    #expect(!error.message.isEmpty)
                }
            }
            if case .single(.request(let single)) = request, let id = single.id, responses.count == 1 {
                #expect(responses[0].id == id, "id \(id) answered as \(responses[0].id)")
            } else if case .refused = request {
                #expect(responses.count == 1 && responses[0].id == .null)
            }
            // Every reply re-serialises with jsonrpc 2.0 and exactly one of result/error.
            let raw = try JSONValue(parsing: reply)
            for object in raw.arrayValue ?? [raw] {
                #expect(object["jsonrpc"] == "2.0")
                #expect((object["result"] == nil) != (object["error"] == nil))
                #expect(object["id"] != nil)
            }
        }
        #expect(replies > 15_000)
        #expect(errors > 5_000)
    }
}
