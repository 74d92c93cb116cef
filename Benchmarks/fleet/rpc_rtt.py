"""Round trip of one JSON-RPC call over a Unix socket, against a peer measured the same way
in the same run: a raw line echo (socat PIPE) on another Unix socket, with this same client.
Then calls/s with CLIENTS concurrent connections.

Usage: python rpc_rtt.py DAEMON_SOCKET ECHO_SOCKET [CALLS] [CLIENTS]
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
    round_trips(daemon, 200)  # warm up both
    round_trips(echo, 200)
    medians = {"daemon.status": [], "raw echo": []}
    for _ in range(5):  # alternate so both see the same background load
        medians["daemon.status"].append(statistics.median(round_trips(daemon, calls // 5)))
        medians["raw echo"].append(statistics.median(round_trips(echo, calls // 5)))
    d = statistics.median(medians["daemon.status"]) * 1e6
    e = statistics.median(medians["raw echo"]) * 1e6
    print(f"round trip, median of {calls} sequential calls: daemon.status {d:.0f} µs, raw echo {e:.0f} µs, ratio {d / e:.2f}x")
    rate = asyncio.run(throughput(daemon, clients, 3.0))
    print(f"daemon.status with {clients} clients: {rate:.0f} calls/s")


if __name__ == "__main__":
    main()
