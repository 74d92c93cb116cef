"""Round trip of one JSON-RPC call over a Unix socket, against a peer measured the same way
in the same run: a raw line echo (socat PIPE) on another Unix socket, with this same client.
With FLOOR_SOCKET, a third peer: Benchmarks/AsyncEcho (a line echo written the way the
daemon's server is, no JSON; Benchmarks/fleet/run starts it --on-loop, as the daemon answers
daemon.status), the floor the server's design sets under the call. With JSON_FLOOR_SOCKET, a
fourth: the same echo reading each request and writing a daemon.status-shaped reply with the
project's one JSON codec (async-echo --on-loop --json), the floor that codec adds. Then calls/s
with CLIENTS concurrent connections.

Usage: python rpc_rtt.py DAEMON_SOCKET ECHO_SOCKET [CALLS] [CLIENTS] [FLOOR_SOCKET] [JSON_FLOOR_SOCKET]
"""
import asyncio
import socket
import statistics
import sys
import time

REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"}\n'


def round_trips(path: str, calls: int) -> list[float]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    reader = sock.makefile("rb")
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        sock.sendall(REQUEST)
        line = reader.readline()
        samples.append(time.perf_counter() - start)
        assert line.endswith(b"\n"), line
    sock.close()
    return samples


async def throughput(path: str, clients: int, seconds: float) -> float:
    done = 0
    stop = time.perf_counter() + seconds

    async def client():
        nonlocal done
        reader, writer = await asyncio.open_unix_connection(path, limit=1 << 20)
        while time.perf_counter() < stop:
            writer.write(REQUEST)
            await reader.readline()
            done += 1
        writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return done / (time.perf_counter() - start)


def main() -> None:
    daemon, echo = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    clients = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    peers = {"daemon.status": daemon, "raw echo": echo}
    if len(sys.argv) > 5:
        peers["NIO echo"] = sys.argv[5]
    if len(sys.argv) > 6:
        peers["NIO + JSON"] = sys.argv[6]
    for path in peers.values():  # warm up each
        round_trips(path, 200)
    medians = {name: [] for name in peers}
    for _ in range(5):  # alternate so each sees the same background load
        for name, path in peers.items():
            medians[name].append(statistics.median(round_trips(path, calls // 5)))
    micros = {name: statistics.median(values) * 1e6 for name, values in medians.items()}
    d, e = micros["daemon.status"], micros["raw echo"]
    print(f"round trip, median of {calls} sequential calls: daemon.status {d:.0f} µs, raw echo {e:.0f} µs, ratio {d / e:.2f}x")
    if "NIO echo" in micros:
        f = micros["NIO echo"]
        print(f"the server design's floor: NIO echo {f:.0f} µs, {f / e:.2f}x the raw echo; daemon.status {d / f:.2f}x the floor")
    if "NIO + JSON" in micros:
        j = micros["NIO + JSON"]
        print(f"with the JSON codec's work: NIO + JSON {j:.0f} µs, {j / e:.2f}x the raw echo; daemon.status {d / j:.2f}x it")
    rate = asyncio.run(throughput(daemon, clients, 3.0))
    print(f"daemon.status with {clients} clients: {rate:.0f} calls/s")


if __name__ == "__main__":
    main()
