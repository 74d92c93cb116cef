"""led.set through blefleetd on 1 board vs all boards: median time of RUNS calls each, over
one JSON-RPC connection (no process start in the figure). Prints one JSON object.

Usage: python daemon_led.py SOCKET COUNT [RUNS]
"""
import json
import socket
import statistics
import sys
import time


def main(path: str, count: int, runs: int) -> dict:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    reader = sock.makefile("rb")
    ident = 0

    def call(select, on: bool) -> float:
        nonlocal ident
        ident += 1
        request = {"jsonrpc": "2.0", "id": ident, "method": "led.set",
                   "params": {"select": select, "on": on, "timeoutMs": 10000}}
        start = time.perf_counter()
        sock.sendall(json.dumps(request).encode() + b"\n")
        reply = json.loads(reader.readline())
        elapsed = time.perf_counter() - start
        totals = reply["result"]["totals"]
        assert totals["failed"] == 0, reply
        return elapsed

    one, every = [], []
    for i in range(runs + 2):   # the first two are warm-up
        a, b = call(["nano-01"], i % 2 == 0), call("all", i % 2 == 0)
        if i >= 2:
            one.append(a)
            every.append(b)
    return {"one_ms": round(statistics.median(one) * 1000, 1),
            "all_ms": round(statistics.median(every) * 1000, 1), "boards": count}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 20)))
