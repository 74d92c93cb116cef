"""The doors soak (issue 50): every kind of client at once against blefleetd and blefleet-web on a
BlueZoo testbed, for a bounded time; Benchmarks/doors/run starts the stack and calls this.

Roles (each counted apart, every call's outcome kept: ok, or the JSON-RPC error code / HTTP
status with the first words of its reason):
  teacher    root: `blectl --json led on --all` / `off --all` alternately every ~2 s; each call's
             wall time and whether every board answered ok.
  read-only  uid nobody (its group nogroup is the daemon's read-only group): connections sending
             JSON-RPC batches of temperature.read (maxAgeMs 0, the longest timeout), gatt.read
             and boards.list, one batch of --big-batch items once; and connections that
             subscribe (events.subscribe, gatt.notify, again and again) and read slowly.
  stranger   uid 4242 (no account, no group): socket connects and calls, silent socket
             connections, web requests (/, /metrics, POST /rpc led.set), and the send-and-close
             race against POST /rpc (Tests/web/test_roles.py's ATTACK), in bursts.
  web        uid nobody: /events streams (one read slowly), a /metrics scrape every second, a
             page load (GET /) every 5 s, and --idle idle TCP connections held open (reopened
             when the web closes them), spread over 127.0.0.2... at 100 an address.
  greedy     root: device.connect leases on the adapter's devices the fleet does not own (one
             more than the adapter has slots, the last waiting with the longest timeout), and a
             client that goes away mid-connect every 20 s.

The other roles run as worker processes of this file (`--worker ROLE`, as their uid through
setpriv, from a copy they can read); each prints its counts as one JSON object at the end.
Attackers switching LEDs are told by the logs (a led.set the daemon carried out for anyone
but the teacher) and, at the end, by the testbed's LEDs against the teacher's last command.
Standard library only; everything bounded in count and time; loopback and Unix sockets only."""

from __future__ import annotations

import argparse
import errno
import http.client
import json
import os
import random
import re
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

LED_SERVICE = "cd48409a-f3cc-11ed-a05b-0242ac120003"
SENSOR_SERVICE = "d888a9c2-f3cc-11ed-a05b-0242ac120003"
TEMPERATURE = "d888a9c3-f3cc-11ed-a05b-0242ac120003"
NOBODY = 65534
STRANGER = 4242


def log(message: str) -> None:
    print(f"doors: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Counting outcomes


def first_words(text: str, words: int = 6) -> str:
    return " ".join(str(text).split()[:words])


class Tally:
    """Outcomes per (role, call) with a lock: `ok`, `-32000 <reason...>`, `http 403 <reason...>`,
    `oserror ECONNREFUSED`..."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.figures: dict[str, Any] = {}

    def add(self, call: str, outcome: str, n: int = 1) -> None:
        with self.lock:
            self.counts[f"{call}\t{outcome}"] += n

    def rpc(self, call: str, reply: Any) -> None:
        """One JSON-RPC reply (or a batch's item)."""
        if isinstance(reply, dict) and "error" in reply and isinstance(reply["error"], dict):
            error = reply["error"]
            self.add(call, f"{error.get('code')} {first_words(error.get('message', ''))}")
        elif isinstance(reply, dict) and "result" in reply:
            # A fleet call answers per board: a result with failed boards is counted by the
            # first failed board's error code.
            result = reply["result"]
            totals = result.get("totals") if isinstance(result, dict) else None
            if isinstance(totals, dict) and totals.get("failed"):
                failed = [r for r in result.get("results", []) if isinstance(r, dict) and not r.get("ok")]
                error = failed[0].get("error", {}) if failed else {}
                code = error.get("code", "?") if isinstance(error, dict) else error
                self.add(call, f"board errors ({totals.get('failed')} of {totals.get('failed', 0) + totals.get('ok', 0)}): {code}")
            else:
                self.add(call, "ok")
        else:
            self.add(call, f"malformed {first_words(json.dumps(reply)[:80])}")

    def oserror(self, call: str, error: BaseException) -> None:
        if isinstance(error, OSError) and error.errno:
            self.add(call, f"oserror {errno.errorcode.get(error.errno, error.errno)}")
        else:
            self.add(call, f"error {type(error).__name__} {first_words(str(error), 4)}".strip())

    def figure(self, key: str, value: Any) -> None:
        with self.lock:
            self.figures[key] = value

    def bump(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.figures[key] = self.figures.get(key, 0) + n

    def dump(self) -> dict[str, Any]:
        with self.lock:
            calls: dict[str, dict[str, int]] = {}
            for key, n in self.counts.items():
                call, outcome = key.split("\t", 1)
                calls.setdefault(call, {})[outcome] = n
            return {"calls": calls, "figures": dict(self.figures)}


def http_outcome(status: int, body: bytes) -> str:
    if status == 200:
        return "http 200"
    return f"http {status} {first_words(body.decode(errors='replace'))}"


# ---------------------------------------------------------------------------------------------
# A JSON-RPC line on the daemon's socket


class Line:
    """One connection to the daemon, newline-delimited JSON; reads with a deadline."""

    def __init__(self, path: str, timeout: float = 10) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except BaseException:
            self.sock.close()
            raise
        self.buffer = b""
        self.ids = 0

    def next_id(self) -> int:
        self.ids += 1
        return self.ids

    def send(self, message: Any) -> None:
        self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id(), "method": method}
        if params is not None:
            body["params"] = params
        return body

    def read_message(self, deadline: float, chunk: int = 65536) -> Any:
        """The next JSON text; TimeoutError at the deadline, EOFError when the daemon closed."""
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply before the deadline")
            self.sock.settimeout(min(left, 5))
            try:
                data = self.sock.recv(chunk)
            except socket.timeout:
                continue
            if not data:
                raise EOFError("the daemon closed the connection")
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        """One call; notifications before its reply are skipped."""
        message = self.request(method, params)
        self.send(message)
        deadline = time.monotonic() + timeout
        while True:
            reply = self.read_message(deadline)
            if isinstance(reply, dict) and reply.get("id") == message["id"]:
                return reply
            if isinstance(reply, dict) and "id" in reply and reply["id"] is None:
                return reply  # an error the daemon could not tie to a request

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def socket_call(tally: Tally, call: str, path: str, method: str, params: dict[str, Any] | None,
                timeout: float = 30) -> Any:
    """Connect, call once, close; the outcome counted under `call`."""
    try:
        line = Line(path, timeout=timeout)
    except OSError as error:
        tally.oserror(call, error)
        return None
    try:
        reply = line.call(method, params, timeout)
        tally.rpc(call, reply)
        return reply
    except (OSError, TimeoutError, EOFError, ValueError) as error:
        tally.oserror(call, error)
        return None
    finally:
        line.close()


# ---------------------------------------------------------------------------------------------
# HTTP


def http_request(port: int, method: str, path: str, body: bytes | None = None, timeout: float = 15,
                 headers: dict[str, str] | None = None) -> tuple[int, bytes, float]:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
        return response.status, data, time.monotonic() - started
    finally:
        connection.close()


def http_call(tally: Tally, call: str, port: int, method: str, path: str, body: bytes | None = None,
              headers: dict[str, str] | None = None, latencies: list[float] | None = None) -> None:
    try:
        status, data, took = http_request(port, method, path, body, headers=headers)
    except (OSError, http.client.HTTPException) as error:
        tally.oserror(call, error)
        return
    if latencies is not None and status == 200:
        latencies.append(took)
    if status == 200 and path == "/rpc":
        try:
            tally.rpc(call, json.loads(data))
        except ValueError:
            tally.add(call, "http 200 not JSON")
    else:
        tally.add(call, http_outcome(status, data))


def rpc_body(method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


# ---------------------------------------------------------------------------------------------
# Workers: each runs until its deadline, then prints its tally


def run_threads(targets: list[Callable[[], None]]) -> None:
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def worker_read_only(args: argparse.Namespace, tally: Tally, deadline: float) -> None:
    boards = [f"nano-{i:02d}" for i in range(1, args.boards + 1)]

    def batch_items(n: int) -> list[tuple[str, dict[str, Any]]]:
        kinds: list[tuple[str, dict[str, Any]]] = [
            ("temperature.read", {"select": "all", "maxAgeMs": 0, "timeoutMs": 600_000}),
            ("gatt.read", {"select": "all", "service": SENSOR_SERVICE, "characteristic": TEMPERATURE}),
            ("temperature.read", {"select": random.choice(boards), "maxAgeMs": 0, "timeoutMs": 600_000}),
            ("boards.list", {}),
        ]
        return [kinds[i % len(kinds)] for i in range(n)]

    def batcher(number: int) -> Callable[[], None]:
        def run() -> None:
            line: Line | None = None
            big_sent = number != 0  # connection 0 sends the one big batch first
            while time.monotonic() < deadline:
                try:
                    if line is None:
                        line = Line(args.socket)
                        tally.bump("batch connections opened")
                    size = args.batch if big_sent else args.big_batch
                    big_sent = True
                    items = batch_items(size)
                    batch = [line.request(method, params) for method, params in items]
                    names = {m["id"]: m["method"] for m in batch}
                    started = time.monotonic()
                    line.send(batch)
                    tally.bump("batch items sent", size)
                    # The reply to a batch is one array; an error about the whole batch one object.
                    reply_deadline = min(deadline + 30, time.monotonic() + 120)
                    while True:
                        reply = line.read_message(reply_deadline)
                        if isinstance(reply, list):
                            for item in reply:
                                tally.rpc(f"batch {names.get(item.get('id'), '?')}", item)
                            tally.add(f"batch of {size}", "answered")
                            break
                        if isinstance(reply, dict) and (reply.get("id") in names or reply.get("id") is None):
                            tally.rpc(f"batch of {size} (whole)", reply)
                            break
                    took = time.monotonic() - started
                    with tally.lock:
                        tally.figures["batch reply seconds max"] = max(tally.figures.get("batch reply seconds max", 0), round(took, 3))
                    time.sleep(0.5)
                except (BrokenPipeError, ConnectionResetError, EOFError):
                    tally.add("batch connection", "closed by the daemon")
                    if line:
                        line.close()
                    line = None
                    time.sleep(1)
                except (OSError, TimeoutError, ValueError) as error:
                    tally.oserror("batch connection", error)
                    if line:
                        line.close()
                    line = None
                    time.sleep(1)
            if line:
                line.close()
        return run

    def subscriber(number: int) -> Callable[[], None]:
        """Subscribes again and again (events.subscribe, gatt.notify on every board's
        temperature) and reads a KiB every 2 s: a slow reader."""
        def run() -> None:
            line: Line | None = None
            pending: dict[int, str] = {}
            last_subscribe = 0.0
            subscribes = 0
            while time.monotonic() < deadline:
                try:
                    if line is None:
                        line = Line(args.socket)
                        tally.bump("subscriber connections opened")
                        pending.clear()
                        last_subscribe = 0.0
                    if subscribes < args.subscribes and time.monotonic() - last_subscribe > 5:
                        last_subscribe = time.monotonic()
                        for _ in range(5):
                            for method, params in (("events.subscribe", {}),
                                                   ("gatt.notify", {"select": "all", "service": SENSOR_SERVICE,
                                                                    "characteristic": TEMPERATURE})):
                                message = line.request(method, params)
                                pending[message["id"]] = method
                                line.send(message)
                                subscribes += 1
                    # A slow reader: one KiB, then 2 s of nothing.
                    readable, _, _ = select.select([line.sock], [], [], 2)
                    if readable:
                        data = line.sock.recv(1024)
                        if not data:
                            raise EOFError("the daemon closed the connection")
                        line.buffer += data
                        while b"\n" in line.buffer:
                            text, line.buffer = line.buffer.split(b"\n", 1)
                            message = json.loads(text)
                            if isinstance(message, dict) and message.get("id") in pending:
                                tally.rpc(pending.pop(message["id"]), message)
                            elif isinstance(message, dict) and "method" in message:
                                tally.bump(f"notifications read ({message['method']})")
                            else:
                                tally.rpc("subscriber other", message)
                    time.sleep(2)
                except (BrokenPipeError, ConnectionResetError, EOFError):
                    tally.add("subscriber connection", "closed by the daemon")
                    if line:
                        line.close()
                    line = None
                    time.sleep(5)
                except (OSError, TimeoutError, ValueError) as error:
                    tally.oserror("subscriber connection", error)
                    if line:
                        line.close()
                    line = None
                    time.sleep(5)
            if line:
                line.close()
        return run

    def reader() -> None:
        """One plain call at a time, a connection each: what a well-behaved viewer does, beside
        the greedy ones."""
        while time.monotonic() < deadline:
            socket_call(tally, "single boards.list", args.socket, "boards.list", {})
            socket_call(tally, "single temperature.read", args.socket, "temperature.read", {"select": "all"})
            socket_call(tally, "single led.set (not its role)", args.socket, "led.set", {"select": "all", "on": True})
            time.sleep(2)

    run_threads([batcher(i) for i in range(args.batchers)] + [subscriber(i) for i in range(args.subscribers)] + [reader])


def worker_stranger(args: argparse.Namespace, tally: Tally, deadline: float) -> None:
    port = args.web_port
    attack_request = rpc_body("led.set", {"select": "all", "on": True})
    raw = (f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(attack_request)}\r\n\r\n").encode() + attack_request

    def socket_calls() -> None:
        while time.monotonic() < deadline:
            socket_call(tally, "socket boards.list", args.socket, "boards.list", {})
            socket_call(tally, "socket led.set", args.socket, "led.set", {"select": "all", "on": True})
            time.sleep(1)

    def silent() -> None:
        """Connections that say nothing: does the daemon close a peer with no role?"""
        held: list[socket.socket] = []
        opened = 0
        while time.monotonic() < deadline:
            while len(held) < 5 and opened < 200:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(args.socket)
                    held.append(s)
                    opened += 1
                    tally.add("socket silent connect", "connected")
                except OSError as error:
                    s.close()
                    tally.oserror("socket silent connect", error)
                    opened += 1
                    break
            if held:
                readable, _, _ = select.select(held, [], [], 2)
                for s in readable:
                    try:
                        data = s.recv(4096)
                    except OSError:
                        data = b""
                    if not data:
                        tally.add("socket silent connect", "closed by the daemon")
                        held.remove(s)
                        s.close()
            else:
                time.sleep(2)
        tally.figure("silent connections still open at the end", len(held))
        for s in held:
            s.close()

    def web() -> None:
        while time.monotonic() < deadline:
            http_call(tally, "web GET /", port, "GET", "/")
            http_call(tally, "web GET /metrics", port, "GET", "/metrics")
            http_call(tally, "web POST /rpc led.set", port, "POST", "/rpc",
                      rpc_body("led.set", {"select": "all", "on": True}), {"Content-Type": "application/json"})
            time.sleep(2)

    def attack() -> None:
        """The race of issue 50 item 1: send led.set all on, close at once; 8 threads of 10, every 10 s."""
        def burst() -> None:
            for _ in range(10):
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s.sendall(raw)
                    s.close()
                    tally.add("web send-and-close led.set", "sent")
                except OSError as error:
                    tally.oserror("web send-and-close led.set", error)
        while time.monotonic() < deadline - 5:
            run_threads([burst] * 8)
            time.sleep(10)

    run_threads([socket_calls, silent, web, attack])


def worker_web(args: argparse.Namespace, tally: Tally, deadline: float) -> None:
    port = args.web_port
    scrapes: list[float] = []
    pages: list[float] = []

    def scraper() -> None:
        while time.monotonic() < deadline:
            started = time.monotonic()
            http_call(tally, "GET /metrics", port, "GET", "/metrics", latencies=scrapes)
            time.sleep(max(0.0, 1 - (time.monotonic() - started)))

    def pager() -> None:
        while time.monotonic() < deadline:
            http_call(tally, "GET /", port, "GET", "/", latencies=pages)
            time.sleep(5)

    def stream(number: int) -> Callable[[], None]:
        slow = number == 0

        def run() -> None:
            while time.monotonic() < deadline:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                try:
                    connection.request("GET", "/events")
                    response = connection.getresponse()
                    if response.status != 200:
                        tally.add("GET /events", http_outcome(response.status, response.read()))
                        time.sleep(5)
                        continue
                    tally.add("GET /events", "http 200")
                    while time.monotonic() < deadline:
                        data = response.read1(1024 if slow else 65536)
                        if not data:
                            tally.add("GET /events", "stream closed by the web")
                            break
                        tally.bump("event stream bytes read", len(data))
                        if slow:
                            time.sleep(5)
                except socket.timeout:
                    tally.add("GET /events", "stream silent 30 s")
                except (OSError, http.client.HTTPException) as error:
                    tally.oserror("GET /events", error)
                    time.sleep(2)
                finally:
                    connection.close()
        return run

    def idle() -> None:
        """--idle connections that send nothing, 100 an address from 127.0.0.2 on; every 5 s the
        ones the web closed are opened again (counted)."""
        held: dict[int, socket.socket] = {}
        closed_by_web = 0

        def open_one(slot: int) -> None:
            s = socket.socket()
            try:
                s.bind((f"127.0.0.{2 + slot // 100}", 0))
                s.settimeout(5)
                s.connect(("127.0.0.1", port))
                s.setblocking(False)
                held[slot] = s
                tally.add("idle connection", "opened")
            except OSError as error:
                s.close()
                tally.oserror("idle connection", error)

        for slot in range(args.idle):
            open_one(slot)
        most = len(held)
        while time.monotonic() < deadline:
            time.sleep(5)
            for slot, s in list(held.items()):
                try:
                    data = s.recv(4096)
                    if data == b"":
                        raise ConnectionResetError
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                s.close()
                del held[slot]
                closed_by_web += 1
            tally.figure("idle connections closed by the web", closed_by_web)
            for slot in range(args.idle):
                if slot not in held and time.monotonic() < deadline:
                    open_one(slot)
            most = max(most, len(held))
        tally.figure("idle connections open at the end", len(held))
        tally.figure("idle connections most open", most)
        for s in held.values():
            s.close()

    run_threads([scraper, pager, idle] + [stream(i) for i in range(args.streams)])
    for name, values in (("/metrics", scrapes), ("GET /", pages)):
        if values:
            tally.figure(f"{name} seconds p50/p99/max",
                         [round(percentile(values, 50), 4), round(percentile(values, 99), 4), round(max(values), 4)])


def worker_greedy(args: argparse.Namespace, tally: Tally, deadline: float) -> None:
    """Leases on the devices the fleet does not own: one more than the adapter's slots, each
    connection holding its lease until the end; the last waits with the longest timeout."""
    extras: list[str] = args.extras.split(",") if args.extras else []
    leased: set[str] = set()

    def holder(address: str) -> Callable[[], None]:
        def run() -> None:
            while time.monotonic() < deadline:
                try:
                    line = Line(args.socket, timeout=15)
                except OSError as error:
                    tally.oserror("device.connect", error)
                    time.sleep(10)
                    continue
                try:
                    line.send(line.request("device.connect", {"address": address, "timeoutMs": 600_000}))
                    reply = line.read_message(deadline)
                    tally.rpc("device.connect", reply)
                    if "result" in reply:
                        with tally.lock:
                            leased.add(address)
                            tally.figures["most leases held at once"] = max(tally.figures.get("most leases held at once", 0), len(leased))
                        # Hold the lease: read (and drop) what comes until the deadline.
                        while time.monotonic() < deadline:
                            try:
                                line.read_message(deadline)
                            except TimeoutError:
                                break
                        with tally.lock:
                            leased.discard(address)
                    else:
                        time.sleep(10)
                except TimeoutError:
                    tally.add("device.connect", "still waiting at the end")
                except (OSError, EOFError, ValueError) as error:
                    tally.oserror("device.connect", error)
                    time.sleep(5)
                finally:
                    line.close()
        return run

    def quitter() -> None:
        """A client that goes away mid-connect, every 20 s."""
        if not extras:
            return
        while time.monotonic() < deadline - 20:
            time.sleep(20)
            try:
                line = Line(args.socket)
                line.send(line.request("device.connect", {"address": extras[-1], "timeoutMs": 600_000}))
                time.sleep(0.3)
                line.close()
                tally.add("device.connect, gone after 0.3 s", "sent")
            except OSError as error:
                tally.oserror("device.connect, gone after 0.3 s", error)

    run_threads([holder(a) for a in extras] + [quitter])


WORKERS: dict[str, Callable[[argparse.Namespace, Tally, float], None]] = {
    "read-only": worker_read_only, "stranger": worker_stranger, "web": worker_web, "greedy": worker_greedy,
}


def worker_main(args: argparse.Namespace) -> None:
    tally = Tally()
    deadline = time.monotonic() + args.seconds
    random.seed(args.role)
    try:
        WORKERS[args.role](args, tally, deadline)
    except Exception as error:  # a refusal is data; a crash of the worker is data too
        tally.add("worker", f"crashed {type(error).__name__}: {first_words(str(error), 10)}")
    sys.stdout.write(json.dumps(tally.dump()) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------------
# The conductor (root)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def process_sample(pid: int) -> dict[str, Any]:
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if line.startswith("VmRSS:"))
        return {"fds": fds, "rss_mb": round(rss / 1024, 1)}
    except (OSError, StopIteration):
        return {"fds": None, "rss_mb": None, "gone": True}


def testbed_leds(run_dir: str) -> dict[str, int | None]:
    out = subprocess.run([str(ROOT / "scripts" / "testbed"), "state", "--run-dir", run_dir],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return {b["name"]: b["led"] for b in json.loads(out)["boards"]}


def connected_addresses(bus: str) -> set[str]:
    """The addresses BlueZ shows a link to, read with busctl (the referee of test_devices.py)."""
    out = subprocess.run(["busctl", f"--address={bus}", "--json=short", "call", "org.bluez", "/",
                          "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"],
                         capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return set()
    objects = json.loads(out.stdout)["data"][0]
    return {p["org.bluez.Device1"]["Address"]["data"] for p in objects.values()
            if "org.bluez.Device1" in p and p["org.bluez.Device1"]["Connected"]["data"]}


ROOT = Path(__file__).resolve().parents[2]


class Teacher:
    """root's `blectl --json led on|off --all`, alternately, one every ~2 s."""

    def __init__(self, args: argparse.Namespace, deadline: float) -> None:
        self.args = args
        self.deadline = deadline
        self.calls: list[dict[str, Any]] = []
        self.tally = Tally()
        self.last: bool | None = None

    def run(self) -> None:
        on = True
        started = time.monotonic()
        while time.monotonic() < self.deadline:
            word = "on" if on else "off"
            t0 = time.monotonic()
            entry: dict[str, Any] = {"at_s": round(t0 - started, 1), "command": word}
            try:
                result = subprocess.run([self.args.blectl, "--socket", self.args.socket, "--json", "led", word, "--all"],
                                        capture_output=True, text=True, timeout=150)
                entry["seconds"] = round(time.monotonic() - t0, 4)
                entry["rc"] = result.returncode
                try:
                    answer = json.loads(result.stdout)
                    totals = answer.get("totals", {})
                    entry["ok"] = totals.get("ok", 0)
                    entry["failed"] = totals.get("failed", 0)
                    failures = [f"{r.get('name')}: {first_words(json.dumps(r.get('error', ''))[:120], 8)}"
                                for r in answer.get("results", []) if not r.get("ok")]
                    if failures:
                        entry["failures"] = failures
                except ValueError:
                    entry["ok"] = 0
                    entry["stderr"] = first_words(result.stderr, 12)
            except subprocess.TimeoutExpired:
                entry["seconds"] = round(time.monotonic() - t0, 4)
                entry["rc"] = "timeout"
                entry["ok"] = 0
            entry["all"] = entry.get("ok") == self.args.boards and entry.get("rc") == 0
            self.tally.add(f"led {word} --all", "every board ok" if entry["all"]
                           else f"{entry.get('ok', 0)} of {self.args.boards} ok (rc {entry.get('rc')})")
            self.calls.append(entry)
            self.last = on
            on = not on
            # The next one 2 s after this one started (at once after a slow one).
            time.sleep(max(0.0, min(t0 + 2 - time.monotonic(), self.deadline - time.monotonic())))


def log_findings(daemon_log: Path, web_log: Path, web_pid: int) -> dict[str, Any]:
    """What the logs say the attackers got: led.set the daemon carried out for anyone but the
    teacher (uid 0 with no web user) and the web's calls passed on for anyone."""
    daemon = daemon_log.read_text(errors="replace").splitlines() if daemon_log.exists() else []
    web = web_log.read_text(errors="replace").splitlines() if web_log.exists() else []
    def teachers(line: str) -> bool:
        fields = dict(re.findall(r"(client\.[\w-]+)=(\S+)", line))
        return fields.get("client.uid") == "0" and "client.claimed-user" not in fields and fields.get("client.pid") != str(web_pid)
    passed = [line for line in daemon if "State-changing call succeeded" in line and "rpc.method=led.set" in line
              and not teachers(line)]
    web_passed = [line for line in web if "web call" in line and "led.set" in line and "web.allowed=true" in line]
    levels = Counter(m.group(1) for line in daemon if (m := re.match(r"\S+ (\w+) ", line)))
    web_levels = Counter(m.group(1) for line in web if (m := re.match(r"\S+ (\w+) ", line)))
    refused = Counter(m.group(1) for line in web if "web request refused" in line
                      and (m := re.search(r"web\.reason=\"?([^\"]{0,60})", line)))
    return {
        "attacker_led_calls_passed_daemon_log": len(passed),
        "attacker_led_calls_passed_daemon_log_sample": passed[:3],
        "attacker_led_calls_passed_web_log": len(web_passed),
        "attacker_led_calls_passed_web_log_sample": web_passed[:3],
        "daemon_log_lines_by_level": dict(levels),
        "web_log_lines_by_level": dict(web_levels),
        "web_requests_refused_by_reason": dict(refused.most_common(10)),
    }


OK = {"ok", "http 200", "every board ok"}
# Not a call's answer: what a client did or saw (a request sent and closed, a connection opened).
OTHER = ("sent", "opened", "connected", "answered", "still waiting", "stream ", "closed by")


def classify(outcome: str) -> str:
    if outcome in OK:
        return "ok"
    return "other" if outcome.startswith(OTHER) else "refused or failed"


def conductor(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work)
    # The workers of other uids run a copy they can read (the checkout may not be).
    copy = work / "soak.py"
    shutil.copyfile(__file__, copy)
    copy.chmod(0o644)
    seconds = args.minutes * 60
    extras = args.extras
    common = ["--socket", args.socket, "--web-port", str(args.web_port), "--seconds", str(seconds),
              "--boards", str(args.boards)]
    worker_specs: list[tuple[str, list[str], list[str]]] = [
        ("read-only", ["/usr/bin/setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"],
         ["--batchers", str(args.batchers), "--batch", str(args.batch), "--big-batch", str(args.big_batch),
          "--subscribers", str(args.subscribers), "--subscribes", str(args.subscribes)]),
        ("stranger", ["/usr/bin/setpriv", f"--reuid={STRANGER}", f"--regid={STRANGER}", "--clear-groups"], []),
        ("web", ["/usr/bin/setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"],
         ["--idle", str(args.idle), "--streams", str(args.streams)]),
        ("greedy", [], ["--extras", extras]),
    ]
    daemon_pid, web_pid = args.daemon_pid, args.web_pid
    samples: dict[str, Any] = {"before": {"daemon": process_sample(daemon_pid), "web": process_sample(web_pid)}}
    log(f"before: daemon {samples['before']['daemon']}, web {samples['before']['web']}")
    deadline = time.monotonic() + seconds
    workers: dict[str, subprocess.Popen[str]] = {}
    errors: dict[str, Any] = {}
    for role, prefix, extra in worker_specs:
        stderr = open(work / f"worker-{role}.err", "w")
        workers[role] = subprocess.Popen(prefix + ["/usr/bin/python3", "-I", str(copy), "--worker", role] + common + extra,
                                         stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL,
                                         text=True, cwd="/", start_new_session=True)
        stderr.close()
    teacher = Teacher(args, deadline)
    teacher_thread = threading.Thread(target=teacher.run, daemon=True)
    teacher_thread.start()

    # During: the processes every 15 s (the peaks).
    during: list[dict[str, Any]] = []
    t0 = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(min(15, max(0.1, deadline - time.monotonic())))
        during.append({"at_s": round(time.monotonic() - t0), "daemon": process_sample(daemon_pid), "web": process_sample(web_pid)})
        if int(time.monotonic() - t0) % 60 < 15:
            d, w = during[-1]["daemon"], during[-1]["web"]
            ok = sum(1 for c in teacher.calls if c["all"])
            log(f"{during[-1]['at_s']} s: daemon fds {d['fds']} RSS {d['rss_mb']} MB; web fds {w['fds']} RSS {w['rss_mb']} MB; "
                f"teacher {ok}/{len(teacher.calls)} calls answered by every board")

    teacher_thread.join(180)
    results: dict[str, Any] = {}
    for role, process in workers.items():
        try:
            out, _ = process.communicate(timeout=150)
            last = [line for line in out.splitlines() if line.startswith("{")]
            results[role] = json.loads(last[-1]) if last else {"calls": {}, "figures": {}, "error": "no report"}
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.communicate(timeout=10)
            results[role] = {"calls": {}, "figures": {}, "error": "did not stop in time; killed"}
        if process.returncode not in (0, None):
            errors[role] = {"exit": process.returncode, "stderr": (work / f"worker-{role}.err").read_text()[-1500:]}
    results["teacher"] = teacher.tally.dump()

    # After: every client gone; leases and links released; the processes settled.
    extra_addresses = set(args.extra_addresses.split(",")) if args.extra_addresses else set()
    released_after: float | None = None
    t_end = time.monotonic()
    while time.monotonic() - t_end < 15:
        if not (connected_addresses(args.bus) & extra_addresses):
            released_after = round(time.monotonic() - t_end, 2)
            break
        time.sleep(0.5)
    time.sleep(max(0.0, 5 - (time.monotonic() - t_end)))
    samples["after"] = {"daemon": process_sample(daemon_pid), "web": process_sample(web_pid)}
    samples["peak"] = {name: {"fds": max((s[name]["fds"] or 0) for s in during) if during else None,
                              "rss_mb": max((s[name]["rss_mb"] or 0) for s in during) if during else None}
                       for name in ("daemon", "web")}
    log(f"after: daemon {samples['after']['daemon']}, web {samples['after']['web']}")

    # The referee: the testbed's LEDs against the teacher's last command.
    leds = testbed_leds(args.run_dir)
    fleet = [f"nano-{i:02d}" for i in range(1, args.boards + 1)]
    want = 1 if teacher.last else 0
    mismatched = {name: leds.get(name) for name in fleet if leds.get(name) != want}

    durations = [c["seconds"] for c in teacher.calls]
    every = sum(1 for c in teacher.calls if c["all"])
    findings = log_findings(Path(args.daemon_log), Path(args.web_log), web_pid)
    passed = max(findings["attacker_led_calls_passed_daemon_log"], findings["attacker_led_calls_passed_web_log"])

    per_role: dict[str, Any] = {}
    refused_by_reason: Counter[str] = Counter()
    for role in ("teacher", "read-only", "stranger", "web", "greedy"):
        calls = results.get(role, {}).get("calls", {})
        kinds: Counter[str] = Counter()
        for call, outcomes in calls.items():
            for outcome, n in outcomes.items():
                kind = classify(outcome)
                kinds[kind] += n
                if kind == "refused or failed":
                    refused_by_reason[f"{role}: {outcome}"] += n
        per_role[role] = {**{k: kinds.get(k, 0) for k in ("ok", "refused or failed", "other")},
                          "calls": calls, "figures": results.get(role, {}).get("figures", {})}
    return {
        "minutes": args.minutes,
        "boards": args.boards,
        "config": Path(args.config).read_text() if args.config else None,
        "roles": per_role,
        "refused_by_reason": dict(refused_by_reason.most_common()),
        "teacher": {
            "calls": len(teacher.calls),
            "answered_every_board": every,
            "seconds_p50": round(percentile(durations, 50), 4) if durations else None,
            "seconds_p99": round(percentile(durations, 99), 4) if durations else None,
            "seconds_max": round(max(durations), 4) if durations else None,
            "not_every_board": [c for c in teacher.calls if not c["all"]][:20],
            "last_command": "on" if teacher.last else "off",
        },
        "processes": samples,
        "processes_during": during,
        "processes_alive_at_end": {"daemon": not samples["after"]["daemon"].get("gone"),
                                   "web": not samples["after"]["web"].get("gone")},
        "leds_at_end": leds,
        "leds_not_as_teacher_left_them": mismatched,
        "attacker_led_calls_passed": passed,
        "leds_switched_by_attackers": passed * args.boards,
        "leased_links_released_after_s": released_after,
        "leased_links_at_end": sorted(connected_addresses(args.bus) & extra_addresses),
        "log_findings": findings,
        "worker_errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", dest="role", choices=sorted(WORKERS))
    parser.add_argument("--socket", required=True)
    parser.add_argument("--web-port", type=int, required=True)
    parser.add_argument("--boards", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--minutes", type=float, default=10)
    # read-only
    parser.add_argument("--batchers", type=int, default=4, help="read-only connections sending batches")
    parser.add_argument("--batch", type=int, default=200, help="items in each of their batches")
    parser.add_argument("--big-batch", type=int, default=2000, help="items in one batch sent once")
    parser.add_argument("--subscribers", type=int, default=2, help="read-only connections subscribing, read slowly")
    parser.add_argument("--subscribes", type=int, default=100, help="subscription calls each of them makes")
    # web
    parser.add_argument("--idle", type=int, default=300, help="idle TCP connections held open")
    parser.add_argument("--streams", type=int, default=4, help="/events streams")
    # greedy
    parser.add_argument("--extras", default="", help="addresses of the devices the fleet does not own")
    # conductor
    parser.add_argument("--work")
    parser.add_argument("--run-dir")
    parser.add_argument("--bus")
    parser.add_argument("--blectl")
    parser.add_argument("--daemon-pid", type=int)
    parser.add_argument("--web-pid", type=int)
    parser.add_argument("--daemon-log")
    parser.add_argument("--web-log")
    parser.add_argument("--config")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.role:
        worker_main(args)
        return
    args.extra_addresses = args.extras
    report = conductor(args)
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
