// async-echo: the floor under the daemon's round trip. A line echo on a Unix socket written
// the way blefleetd's server is (NIOAsyncChannel, LineBasedFrameDecoder, one task per
// connection, each line a child task of it, written back through the outbound writer), with
// no JSON and no work: what the anchors' async server design costs per call by itself.
// `--inline` answers in the connection's task instead (no child task: one call at a time);
// `--on-loop` answers in a channel handler on the event loop, as the daemon has answered a
// call that never waits (daemon.status) since 2026-11-26.
//
// Measured 2026-11-23 (2 cores, 20 boards on the daemon; Benchmarks/fleet/rpc_rtt.py, three
// runs, median of 2000 sequential calls each): socat's raw echo 28–34 µs; this echo with a
// child task per line 74–82 µs (2.3–2.7× the raw echo), inline 47–68 µs (1.8×); the daemon's
// daemon.status 174–220 µs (6.1–6.4×, 2.2–2.8× this floor). So the issue-12 goal (daemon.status
// ≤ 2× a raw echo) is out of reach for any server built this way on this machine, before any
// JSON is read or written: the child task per call (kept so a slow call does not hold up the
// next ones on its connection) alone costs more than the goal allows.
//
// Measured 2026-11-26 (same machine; rpc_rtt.py with the client on CPU 0 and the servers on
// CPU 1, as Benchmarks/fleet/run now runs it, two runs each of two daemons on one testbed):
// on the event loop this echo is 0.8-1.1x socat's; daemon.status answered on the loop is
// 3.0-3.9x socat's echo (the daemon before it, a child task per call: 4.2-4.9x). Unpinned, the
// same medians swing 1.6-5.1x between runs. What is left over the floor is Foundation's JSON
// (json-bench: reading the request 8.6 µs, writing the reply 21 µs; more in the daemon, with
// cold caches) and building the status.
//
// Measured 2026-11-27 (same machine, pinned as above, two runs): the echo with --json, which
// reads the request and writes a reply of daemon.status's shape with Foundation's JSON and
// does nothing else, is already 3.2-3.7x socat's echo; daemon.status is 1.08-1.09x it. What
// stands between daemon.status and the 2x goal is the JSON codec itself.
//
// `--json` (with --on-loop) answers each line as the daemon answers daemon.status, without
// the fleet: the request read by RPCIncoming and a reply with a fixed status of the same
// shape (one adapter, 20 boards) written by JSONCodec: the floor Foundation's JSON sets.
//
//   swift build -c release --product async-echo
//   .build/release/async-echo SOCKET [--inline | --on-loop [--json]] &
//   python3 Benchmarks/fleet/rpc_rtt.py SOCKET ECHO_SOCKET   # ECHO_SOCKET: socat PIPE, the raw peer
import FleetRPC
import JSONRPC
import NIOCore
import NIOExtras
import NIOPosix

let arguments = CommandLine.arguments.dropFirst()
guard let path = arguments.first else {
    print("usage: async-echo SOCKET [--inline | --on-loop]")
    exit(2)
}
let inline = arguments.contains("--inline")
let onLoop = arguments.contains("--on-loop")
let json = arguments.contains("--json")

/// A daemon.status of the shape Benchmarks/fleet/run's daemon answers (one adapter, 20 boards).
let status = DaemonStatus(
    version: "0.1.0", uptimeSeconds: 123.456, bluez: true, adapter: "hci0 (00:1A:7D:DA:71:13)", powered: true,
    discovering: true,
    adapters: [
        DaemonStatus.Adapter(
            name: "hci0", address: "00:1A:7D:DA:71:13", present: true, powered: true, discovering: true, slotsUsed: 20,
            slotsLimit: 20, boards: (1...20).map { "AA:BB:CC:DD:EE:" + ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) },
            health: .ok)
    ],
    boards: .init(known: 20, connected: 20, ready: 20), clients: 1,
    history: .init(enabled: true, path: "/var/lib/blefleet/history.sqlite3", dropped: 0))

/// `--on-loop`: each line answered by a channel handler on the event loop, as the daemon
/// answers a call that never waits (daemon.status): no task at all.
final class LoopEcho: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var reply = unwrapInboundIn(data)
        if json {
            guard case .single(.request(let request)) = RPCIncoming(parsing: reply.readableBytesView),
                let bytes = try? JSONCodec.encode(RPCReply(id: request.id ?? .null, outcome: .result(status)))
            else { return }
            reply = context.channel.allocator.buffer(capacity: bytes.count + 1)
            reply.writeBytes(bytes)
        }
        reply.writeInteger(UInt8(ascii: "\n"))
        context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
    }
}

let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
            if onLoop { try channel.pipeline.syncOperations.addHandler(LoopEcho()) }
            return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
        }
    }
print("async-echo on \(path)\(onLoop ? " (on the event loop\(json ? ", JSON" : ""))" : inline ? " (inline)" : " (a child task per line)")")
try await withThrowingDiscardingTaskGroup { connections in
    try await server.executeThenClose { inbound in
        for try await connection in inbound {
            connections.addTask {
                try? await connection.executeThenClose { lines, outbound in
                    try await withThrowingDiscardingTaskGroup { calls in
                        for try await line in lines {
                            var reply = line
                            reply.writeInteger(UInt8(ascii: "\n"))
                            if inline {
                                try await outbound.write(reply)
                            } else {
                                calls.addTask { try await outbound.write(reply) }
                            }
                        }
                    }
                }
            }
        }
    }
}
