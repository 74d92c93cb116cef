"""Round trip of history.read calls on the daemon's socket: the median of CALLS calls of
each query, in milliseconds.

Usage: python read_rtt.py SOCKET CALLS NAME PARAMS_JSON [NAME PARAMS_JSON ...]
"""
import json
import socket
import statistics
import sys
import time


def main() -> None:
    path, calls = sys.argv[1], int(sys.argv[2])
    queries = list(zip(sys.argv[3::2], sys.argv[4::2]))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    reader = sock.makefile("rb")
    for name, params in queries:
        request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "history.read", "params": json.loads(params)}).encode() + b"\n"
        samples = []
        points = 0
        for _ in range(calls + 3):  # the first three warm up
            start = time.perf_counter()
            sock.sendall(request)
            reply = json.loads(reader.readline())
            samples.append(time.perf_counter() - start)
            if "error" in reply:
                raise SystemExit(f"{name}: {reply['error']}")
            points = sum(len(board["points"]) for board in reply["result"]["boards"])
        median = statistics.median(samples[3:]) * 1000
        print(f"history.read {name}: median {median:.2f} ms of {calls} calls ({points} points)")


if __name__ == "__main__":
    main()
