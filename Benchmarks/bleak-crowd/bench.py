"""Benchmarks/bleak-crowd: a crowd of independent bleak scripts on one central, plain (BlueZ's
D-Bus) and through blefleetd (`python3 -m blefleet.bleak`), side by side in one run on the
real-BlueZ lane (issue 37). Run it through Benchmarks/bleak-crowd/run, which builds the daemon.

Phases, each on a fresh testbed of SCRIPTS boards on one central (`scripts/testbed start --real`):
  plain   SCRIPTS processes of cycle.py started together, each on its own board for SECONDS;
          then probe.py: connect time (advertising board -> services resolved) and read round
          trip with one connected client.
  fleet   blefleetd (release build) owns the boards; the same cycle.py through the launcher,
          `blectl led on --all` every ~10 s meanwhile; then the same probes through the fleet
          (connect: a fleet board after `blectl disconnect`); then the daemon again with the last
          board left out of the fleet (`allow`), for connects to a device that is not a board
          and scripts SIGKILLed in the middle of such a connect (when a D-Bus monitor sees
          bluetoothd asked to Connect; the connect as it comes, then held 4 s longer by the
          testbed's `fault slow`, then killed when BlueZ shows the link up while it still
          resolves the services): BlueZ must show no link afterwards and the next run must work.
Whatever was started (scripts, daemons, testbeds, a VM booted for the run) is stopped at the
end, also on SIGINT/SIGTERM/SIGHUP or a failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TESTBED = ROOT / "scripts" / "testbed"
PY = sys.executable
CYCLE = HERE / "cycle.py"
PROBE = HERE / "probe.py"
HANG = 45.0
LED_EVERY = 10.0
SLOW_CONNECT = "4s"

DEFAULT_JSON = "/tmp/blefleet-bench-bleak-crowd.json"
DEFAULT_LOGS = "/tmp/blefleet-bench-bleak-crowd.logs"


class CannotRun(Exception):
    """The benchmark itself could not run (exit status 1)."""


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# -- what was started, stopped at the end whatever happens ----------------------------------

class Owned:
    def __init__(self) -> None:
        self.processes: list[subprocess.Popen] = []
        self.daemons: list["Daemon"] = []
        self.beds: list["Bed"] = []
        self.vm: Path | None = None

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        process = subprocess.Popen(*args, **kwargs)
        self.processes.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        for daemon in self.daemons:
            daemon.stop()
        for bed in self.beds:
            bed.stop()
        if self.vm is not None:
            subprocess.run([str(TESTBED), "vm", "stop", "--vm-dir", str(self.vm)], capture_output=True, timeout=120)
            self.vm = None


OWNED = Owned()


def run_cmd(args: list[str], timeout: float, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    if check and result.returncode != 0:
        raise CannotRun(f"{' '.join(args)} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result


# -- a testbed on the real lane ---------------------------------------------------------------

class Bed:
    def __init__(self, run_dir: Path, vm: str, boards: int) -> None:
        self.run_dir = run_dir
        self.stopped = False
        OWNED.beds.append(self)
        out = run_cmd([str(TESTBED), "start", "--real", "--vm", vm, "--boards", str(boards), "--run-dir", str(run_dir),
                       "--owner-pid", str(os.getpid())], timeout=600).stdout
        self.exports = {}
        for line in out.splitlines():
            if line.startswith("export ") and "=" in line:
                key, value = line.removeprefix("export ").split("=", 1)
                self.exports[key] = shlex.split(value)[0] if value else ""
        self.bus = self.exports["DBUS_SYSTEM_BUS_ADDRESS"]
        self.mgmt = self.exports.get("BLEFLEET_MGMT_SOCKET")
        state = self.state()
        self.boards = [(b["name"], b["address"]) for b in state["boards"]]
        # The central adapters' objects: the boards' emulated controllers are BlueZ adapters too.
        self.centrals = {f"/org/bluez/{c['name']}" for c in state.get("centrals", [state["central"]])}

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run_cmd([str(TESTBED), *args, "--run-dir", str(self.run_dir)], timeout=120, check=check)

    def state(self) -> dict:
        return json.loads(self.cli("state").stdout)

    def crashes(self) -> list:
        try:
            return self.state().get("bluez_crashes", [])
        except (CannotRun, json.JSONDecodeError, subprocess.TimeoutExpired) as e:
            return [f"state unavailable: {e}"]

    def links(self) -> dict[str, dict]:
        """BlueZ's devices on the central adapters with a link (Connected or ServicesResolved),
        by address, as busctl reads them from bluetoothd."""
        out = run_cmd(["busctl", f"--address={self.bus}", "--json=short", "call", "org.bluez", "/",
                       "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"], timeout=30).stdout
        found = {}
        for path, interfaces in json.loads(out)["data"][0].items():
            device = interfaces.get("org.bluez.Device1")
            if not device or device.get("Adapter", {}).get("data") not in self.centrals:
                continue
            connected = device.get("Connected", {}).get("data", False)
            resolved = device.get("ServicesResolved", {}).get("data", False)
            if connected or resolved:
                found[device["Address"]["data"]] = {"path": path, "connected": connected, "services_resolved": resolved}
        return found

    def wait_no_link(self, address: str | None, timeout: float) -> float | None:
        """Polls BlueZ (every 0.2 s) until `address` (None: every device) has no link: the
        seconds it took, or None at the deadline."""
        start = time.monotonic()
        while True:
            try:
                links = self.links()
            except (CannotRun, subprocess.TimeoutExpired):
                links = {"?": {}}
            if (address not in links) if address else not links:
                return round(time.monotonic() - start, 3)
            if time.monotonic() - start > timeout:
                return None
            time.sleep(0.2)

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            subprocess.run([str(TESTBED), "stop", "--run-dir", str(self.run_dir)], capture_output=True, timeout=180)


# -- blefleetd --------------------------------------------------------------------------------

class Daemon:
    def __init__(self, work: Path, bed: Bed, bin_dir: Path, name: str, extra_config: str = "") -> None:
        self.bin = bin_dir
        self.socket = str(work / f"{name}.sock")
        self.log = work / f"{name}.log"
        config = work / f"{name}.conf"
        level = os.environ.get("BLEFLEET_BENCH_LOG_LEVEL")
        config.write_text(f"socket-group: root\n{extra_config}" + (f"log-level: {level}\n" if level else ""))
        env = dict(os.environ)
        if bed.mgmt:
            env["BLEFLEET_MGMT_SOCKET"] = bed.mgmt
        self.stopped = False
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [str(bin_dir / "blefleetd"), "--config", str(config), "--socket", self.socket, "--state-dir",
                 str(work / f"{name}.state"), "--bus", bed.bus, "--log-target", "stderr"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        OWNED.daemons.append(self)

    def blectl(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin / "blectl"), "--socket", self.socket, *args], capture_output=True,
                              text=True, timeout=timeout)

    def wait_ready(self, count: int, timeout: float = 180) -> float:
        start = time.monotonic()
        boards: list = []
        while time.monotonic() - start < timeout:
            if self.process.poll() is not None:
                raise CannotRun(f"blefleetd exited ({self.process.returncode}): {self.log.read_text()[-3000:]}")
            if os.path.exists(self.socket):
                out = self.blectl("--json", "boards", timeout=30)
                if out.returncode == 0:
                    boards = json.loads(out.stdout)["boards"]
                    if len(boards) == count and all(b["state"] == "ready" for b in boards):
                        return round(time.monotonic() - start, 2)
            time.sleep(0.25)
        raise CannotRun(f"blefleetd has not {count} boards ready after {timeout} s: "
                        f"{[(b.get('name'), b.get('state')) for b in boards]}; log: {self.log.read_text()[-3000:]}")

    def stop(self) -> int | None:
        if self.stopped:
            return self.process.returncode
        self.stopped = True
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def journal(self) -> dict:
        text = self.log.read_text(errors="replace")
        return {"lines": text.count("\n"), "warnings": text.count(" warning "), "errors": text.count("error"),
                "adapter_power_cycles": text.count("adapter stuck ("),
                "discovery_start_cancelled": text.count('could not start discovery; trying again shortly ble.adapter=hci0 error="timed out: cancelled"'),
                "bluez_left_the_bus": text.count("org.bluez left the bus"), "log": self.log.name}


# -- environments of the scripts ----------------------------------------------------------------

def plain_env(bed: Bed) -> dict:
    return dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bed.bus)


def fleet_env(daemon: Daemon) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SYSTEM_BUS_ADDRESS"}
    env["BLEFLEET_SOCKET"] = daemon.socket
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))
    return env


def script_argv(fleet: bool, script: Path, *args: str) -> list[str]:
    return [PY, "-m", "blefleet.bleak", str(script), *args] if fleet else [PY, str(script), *args]


# -- statistics ---------------------------------------------------------------------------------

def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered) + 0.5)) - 1))], 3)


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


# -- the crowd --------------------------------------------------------------------------------

class LedPinger(threading.Thread):
    """`blectl --json led on --all` every ~LED_EVERY s until stopped."""

    def __init__(self, daemon: Daemon, first_at: float) -> None:
        super().__init__(daemon=True)
        self.blefleetd = daemon
        self.first_at = first_at
        self.halt = threading.Event()
        self.calls: list[dict] = []

    def run(self) -> None:
        if self.halt.wait(max(0.0, self.first_at - time.time())):
            return
        while not self.halt.is_set():
            start = time.monotonic()
            at = time.time()
            try:
                out = self.blefleetd.blectl("--json", "--timeout", "60", "led", "on", "--all", timeout=90)
                elapsed = time.monotonic() - start
                call: dict = {"at": round(at, 3), "exit": out.returncode, "latency_ms": round(elapsed * 1000, 1)}
                try:
                    reply = json.loads(out.stdout)
                    call["boards"] = [{"name": r.get("name"), "ok": r.get("ok"), "latency_ms": r.get("latencyMs"),
                                       "error": r.get("error")} for r in reply.get("results", [])]
                    call["totals"] = reply.get("totals")
                except (json.JSONDecodeError, AttributeError):
                    call["output"] = (out.stdout + out.stderr)[-500:]
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - start
                call = {"at": round(at, 3), "exit": None, "latency_ms": round(elapsed * 1000, 1), "output": "blectl timed out"}
            call["all_ok"] = call.get("exit") == 0 and bool(call.get("boards")) and all(b["ok"] for b in call["boards"])
            self.calls.append(call)
            self.halt.wait(max(0.0, LED_EVERY - elapsed))


def crowd(work: Path, phase: str, bed: Bed, daemon: Daemon | None, scripts: int, seconds: float) -> dict:
    fleet = daemon is not None
    env = fleet_env(daemon) if daemon is not None else plain_env(bed)
    start_at = time.time() + 5  # the scripts' imports done, they start their first cycles together
    members = []
    for index in range(scripts):
        name, address = bed.boards[index]
        out = work / f"{phase}-{index + 1}.jsonl"
        out.write_text("")
        stdout = open(work / f"{phase}-{index + 1}.out", "wb")
        stderr = open(work / f"{phase}-{index + 1}.err", "wb")
        process = OWNED.popen(script_argv(fleet, CYCLE, address, str(out), "--seconds", str(seconds), "--start-at",
                                          str(start_at)), env=env, stdout=stdout, stderr=stderr,
                              stdin=subprocess.DEVNULL)
        members.append({"name": name, "address": address, "out": out, "process": process, "files": (stdout, stderr)})
    pinger = LedPinger(daemon, start_at + 5) if daemon is not None else None
    if pinger:
        pinger.start()
    log(f"{phase}: {scripts} scripts started, {seconds:g} s each from {time.strftime('%H:%M:%S', time.localtime(start_at))}")
    deadline = start_at + seconds + HANG + 60
    for member in members:
        process = member["process"]
        try:
            process.wait(max(1.0, deadline - time.time()))
            member["killed"] = False
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            member["killed"] = True
        for f in member["files"]:
            f.close()
    if pinger:
        pinger.halt.set()
        pinger.join(120)
    results = []
    for index, member in enumerate(members):
        records = [json.loads(line) for line in member["out"].read_text().splitlines() if line.strip()]
        started = (work / f"{phase}-{index + 1}.out").read_text(errors="replace").count("connecting")
        unfinished = max(0, started - len(records)) if member["killed"] else 0
        outcomes = Counter(r["outcome"] for r in records)
        errors = Counter(f"{r['error']['type']}: {r['error']['message']}" for r in records if r.get("error"))
        ok_times = [r["duration"] for r in records if r["outcome"] == "ok"]
        stderr_tail = (work / f"{phase}-{index + 1}.err").read_text(errors="replace")[-1500:]
        results.append({
            "script": index + 1, "board": member["name"], "address": member["address"],
            "tried": len(records) + unfinished, "ok": outcomes["ok"], "failed": outcomes["failed"],
            "hung": outcomes["hung"] + unfinished, "unfinished_at_the_end": unfinished,
            "median_cycle_s": median(ok_times), "p95_cycle_s": percentile(ok_times, 95),
            "first_ok_at_s": min((r["start"] for r in records if r["outcome"] == "ok"), default=None),
            "exit_status": member["process"].returncode, "killed_at_the_end": member["killed"],
            "errors": dict(errors.most_common()), "stderr_tail": stderr_tail if member["process"].returncode else "",
            "cycles": records})
    every_ok = [r["duration"] for result in results for r in result["cycles"] if r["outcome"] == "ok"]
    totals: dict = {key: sum(r[key] for r in results) for key in ("tried", "ok", "failed", "hung")}
    totals["median_cycle_s"] = median(every_ok)
    totals["scripts_with_no_ok_cycle"] = sum(1 for r in results if r["ok"] == 0)
    summary: dict = {"scripts": results, "totals": totals}
    if pinger:
        calls = pinger.calls
        latencies = [c["latency_ms"] for c in calls]
        summary["led_all"] = {
            "calls": len(calls), "all_boards_ok": sum(1 for c in calls if c["all_ok"]),
            "median_ms": median(latencies), "max_ms": max(latencies) if latencies else None,
            "failed_boards": sum(1 for c in calls for b in c.get("boards", []) if not b["ok"]),
            "board_errors": dict(Counter(f"{(b['error'] or {}).get('code')}: {(b['error'] or {}).get('message')}"
                                         for c in calls for b in c.get("boards", []) if not b["ok"]).most_common()),
            "each": calls}
    return summary


# -- the probes -------------------------------------------------------------------------------

def probe(env: dict, fleet: bool, *args: str, timeout: float = 300) -> dict:
    try:
        out = subprocess.run(script_argv(fleet, PROBE, *args), env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": {"type": "probe timed out", "message": f"after {timeout} s"}}
    lines = out.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "error": {"type": f"probe exited {out.returncode}", "message": out.stderr.strip()[-600:]}}


def read_rtt(env: dict, fleet: bool, address: str, reads: int) -> dict:
    result = probe(env, fleet, "rtt", address, str(reads))
    samples = result.get("samples_ms", [])
    return {"reads": len(samples), "errors": result.get("errors", []), "error": result.get("error"),
            "median_ms": median(samples), "p95_ms": percentile(samples, 95), "min_ms": min(samples, default=None),
            "max_ms": max(samples, default=None), "samples_ms": samples}


def connects(env: dict, fleet: bool, bed: Bed, address: str, count: int, before=None) -> dict:
    """`count` connects of `address`, each once BlueZ shows it with no link (advertising):
    the connect times, failures, and how long BlueZ took to show no link after each."""
    each = []
    for _ in range(count):
        note = before() if before else None
        waited = bed.wait_no_link(address, 30)
        result = probe(env, fleet, "connect", address)
        result["no_link_before_s"] = waited
        if note:
            result["before"] = note
        result["link_gone_after_s"] = bed.wait_no_link(address, 30) if not fleet or before is None else None
        # An advertising device to begin with: no link in BlueZ, and for a fleet board the
        # daemon hearing it (`discovered`); else the connect only joined a link (not counted).
        result["advertising_before"] = waited is not None and (not note or note.get("state") == "discovered")
        each.append(result)
    times = [r["connect_s"] for r in each if r.get("ok") and r["advertising_before"]]
    return {"tried": count, "ok": sum(1 for r in each if r.get("ok")), "counted": len(times),
            "not_advertising_before": sum(1 for r in each if not r["advertising_before"]),
            "median_s": median(times), "p95_s": percentile(times, 95),
            "min_s": min(times, default=None), "max_s": max(times, default=None),
            "errors": dict(Counter(f"{r['error']['type']}: {r['error']['message']}" for r in each if r.get("error"))),
            "each": each}


# -- a script killed in the middle of a connect through the fleet ---------------------------------

async def kill_in_connect(bed: Bed, daemon: Daemon, address: str, work: Path, name: str, at: str = "call") -> dict:
    """Starts cycle.py through the fleet on `address` (a device that is not a fleet board, its
    connects held open by the testbed's `fault slow`), SIGKILLs it when bluetoothd is asked to
    Connect (a D-Bus monitor sees the call; `at="link"`: when BlueZ then shows the link up,
    `Connected` true, while its services are still being resolved), then waits for that
    Connect to be answered and for BlueZ to show no link (busctl); the figures say what was
    seen."""
    path = f"/org/bluez/hci0/dev_{address.replace(':', '_')}"
    monitor = await MessageBus(bus_address=bed.bus).connect()
    loop = asyncio.get_running_loop()
    seen_call = asyncio.Event()
    answered = asyncio.Event()
    calls: dict[tuple[str, int], float] = {}
    answer: dict = {}
    link: dict = {}

    def on_message(m: Message) -> bool:
        if m.message_type == MessageType.METHOD_CALL:
            if m.member == "Connect" and m.path == path and not calls:
                calls[(m.sender, m.serial)] = loop.time()
                if at == "call":
                    seen_call.set()
            return True
        if m.message_type == MessageType.SIGNAL:
            if m.path == path and m.member == "PropertiesChanged" and calls and m.body[0] == "org.bluez.Device1":
                changed = m.body[1]
                if "ServicesResolved" in changed and changed["ServicesResolved"].value:
                    link.setdefault("resolved_at", loop.time())
                if "Connected" in changed and changed["Connected"].value:
                    link.setdefault("up_at", loop.time())
                    if at == "link" and "resolved_at" not in link:
                        seen_call.set()
            return False
        if m.message_type in (MessageType.METHOD_RETURN, MessageType.ERROR) and (m.destination, m.reply_serial) in calls:
            answer.update(kind="error" if m.message_type == MessageType.ERROR else "return",
                          error=m.error_name, at=loop.time())
            answered.set()
        return False

    monitor.add_message_handler(on_message)
    reply = await monitor.call(Message(
        destination="org.freedesktop.DBus", path="/org/freedesktop/DBus", interface="org.freedesktop.DBus.Monitoring",
        member="BecomeMonitor", signature="asu",
        body=[[f"type='method_call',interface='org.bluez.Device1',member='Connect',path='{path}'",
               "type='method_return'", "type='error'",
               f"type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='{path}'"], 0]))
    if reply.message_type == MessageType.ERROR:
        monitor.disconnect()
        raise CannotRun(f"the bus refused a monitor: {reply.error_name} {reply.body}")
    out = work / f"{name}.jsonl"
    result: dict = {}
    process = await asyncio.create_subprocess_exec(
        *script_argv(True, CYCLE, address, str(out), "--cycles", "1"), env=fleet_env(daemon),
        stdout=open(work / f"{name}.out", "wb"), stderr=open(work / f"{name}.err", "wb"),
        stdin=subprocess.DEVNULL)
    try:
        # The Connect call, or the script's end (a link already up needs no Connect).
        seen = asyncio.ensure_future(seen_call.wait())
        ended = asyncio.ensure_future(process.wait())
        await asyncio.wait({seen, ended}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
        seen.cancel()
        ended.cancel()
        result["connect_seen"] = seen_call.is_set()
        killed_at = loop.time()
        result["script_ended_before_kill"] = process.returncode is not None
        if process.returncode is None:
            try:
                process.kill()
            except ProcessLookupError:
                result["script_ended_before_kill"] = True
        await process.wait()
        result["connect_answered_before_kill"] = answered.is_set()
        result["link_up_before_kill"] = link.get("up_at", killed_at + 1) <= killed_at
        result["resolved_before_kill"] = link.get("resolved_at", killed_at + 1) <= killed_at
        try:
            links = bed.links()
            result["link_at_kill"] = address in links
        except CannotRun:
            result["link_at_kill"] = None
        # The Connect ends: cancelled by the daemon, or done (then the daemon must drop it).
        try:
            await asyncio.wait_for(answered.wait(), 30)
        except asyncio.TimeoutError:
            pass
        result["connect_answer"] = answer.get("kind")
        result["connect_error"] = answer.get("error")
        result["connect_answered_after_kill_s"] = round(answer["at"] - killed_at, 3) if answer else None
    finally:
        if process.returncode is None:
            try:
                process.kill()
            except ProcessLookupError:
                pass
            await process.wait()
        monitor.disconnect()
    no_link = await loop.run_in_executor(None, bed.wait_no_link, address, 30)
    result["no_link_after_s"] = round(loop.time() - killed_at, 3) if no_link is not None else None
    # The bounded wait is over: BlueZ's word (busctl) on the device's link.
    links = await loop.run_in_executor(None, bed.links)
    result["link_left"] = links.get(address)
    result["left_no_link"] = address not in links
    return result


def kill_tests(work: Path, bed: Bed, daemon: Daemon, board: str, address: str, count: int, slow: str | None,
               at: str = "call") -> dict:
    """`count` scripts killed in the middle of a connect (`at`: see kill_in_connect); with
    `slow`, each connect is held open that much longer by the testbed (`fault slow`)."""
    each = []
    for index in range(count):
        if slow:
            bed.cli("fault", "slow", board, slow)
        try:
            name = f"kill-{'slow' if slow else 'plain'}{'-link' if at == 'link' else ''}-{index + 1}"
            result = asyncio.run(kill_in_connect(bed, daemon, address, work, name, at))
        finally:
            if slow:
                bed.cli("fault", "slow", board, "0", check=False)
        result["slow"] = slow
        # The next run of the same script.
        out = work / f"{name}-next.jsonl"
        with open(work / f"{name}-next.out", "wb") as o, open(work / f"{name}-next.err", "wb") as e:
            subprocess.run(script_argv(True, CYCLE, address, str(out), "--cycles", "1"), env=fleet_env(daemon),
                           stdout=o, stderr=e, stdin=subprocess.DEVNULL, timeout=HANG + 60)
        records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        result["next_run"] = records[0] if records else {"outcome": "no record"}
        result["next_run_ok"] = bool(records) and records[0]["outcome"] == "ok"
        result["no_link_after_next_run_s"] = bed.wait_no_link(address, 30)
        each.append(result)
        log(f"{name}: {result}")
    return {"tried": count, "left_no_link": sum(1 for r in each if r["left_no_link"]),
            "killed_while_connecting": sum(1 for r in each if r["connect_seen"] and not r["connect_answered_before_kill"]),
            "killed_while_resolving": sum(1 for r in each if r["link_up_before_kill"] and not r["resolved_before_kill"]
                                          and not r["connect_answered_before_kill"]),
            "next_run_ok": sum(1 for r in each if r["next_run_ok"]), "each": each}


# -- the run ----------------------------------------------------------------------------------

def plain_phase(work: Path, vm: str, args) -> dict:
    log("plain bleak: starting a testbed")
    bed = Bed(work / "plain-tb", vm, args.scripts)
    result: dict = {"boards": [list(b) for b in bed.boards]}
    result["crowd"] = crowd(work, "plain", bed, None, args.scripts, args.seconds)
    log(f"plain crowd: {result['crowd']['totals']}")
    result["links_after_crowd"] = bed.links()
    result["no_link_after_crowd_s"] = bed.wait_no_link(None, 60)
    env = plain_env(bed)
    name, address = bed.boards[0]
    log(f"plain: read round trips on {name}")
    result["read_rtt"] = read_rtt(env, False, address, args.reads)
    log(f"plain: {args.connects} connects of {name}")
    result["connect"] = connects(env, False, bed, address, args.connects)
    result["bluez_crashes"] = bed.crashes()
    bed.stop()
    return result


def fleet_phase(work: Path, vm: str, bin_dir: Path, args) -> dict:
    log("fleet: starting a testbed and blefleetd")
    bed = Bed(work / "fleet-tb", vm, args.scripts)
    result: dict = {"boards": [list(b) for b in bed.boards]}
    daemon = Daemon(work, bed, bin_dir, "daemon")
    result["ready_s"] = daemon.wait_ready(args.scripts)
    log(f"fleet: {args.scripts} boards ready after {result['ready_s']} s")
    result["crowd"] = crowd(work, "fleet", bed, daemon, args.scripts, args.seconds)
    log(f"fleet crowd: {result['crowd']['totals']}; led --all: "
        f"{ {k: v for k, v in result['crowd']['led_all'].items() if k != 'each'} }")
    env = fleet_env(daemon)
    name, address = bed.boards[0]
    log(f"fleet: read round trips on {name}")
    result["read_rtt"] = read_rtt(env, True, address, args.reads)

    def release_board() -> dict:
        """`blectl disconnect` of the board, BlueZ shows no link, and the daemon hears it
        advertising again (state `discovered`): an advertising board, as the daemon sees it."""
        began = time.monotonic()
        out = daemon.blectl("disconnect", address)
        answered = round(time.monotonic() - began, 3)
        no_link = bed.wait_no_link(address, 30)
        # The release (issue 55: within a second): blectl's whole run until BlueZ shows no link
        # (its last look costs a GetManagedObjects through the VM's bus, ~0.08 s).
        note: dict = {"blectl_disconnect_exit": out.returncode, "blectl_disconnect_s": answered, "no_link_s": no_link,
                      "release_s": None if no_link is None else round(answered + no_link, 3)}
        start = time.monotonic()
        state = None
        while time.monotonic() - start < 30:
            listed = daemon.blectl("--json", "boards", address, timeout=30)
            if listed.returncode == 0:
                boards = json.loads(listed.stdout).get("boards", [])
                state = boards[0].get("state") if boards else None
                if state == "discovered":
                    break
            time.sleep(0.2)
        note.update(state=state, advertising_after_s=round(time.monotonic() - start, 3))
        return note
    log(f"fleet: {args.connects} connects of the fleet board {name} (blectl disconnect before each)")
    result["connect_board"] = connects(env, True, bed, address, args.connects, before=release_board)
    result["daemon_exit"] = daemon.stop()
    result["journal"] = daemon.journal()

    # The last board left out of the fleet: a device that is not a board (issue 37's case).
    other_name, other = bed.boards[-1]
    fleet_boards = [a for _, a in bed.boards[:-1]]
    allow = ", ".join(json.dumps(a) for a in fleet_boards) or '"no-board-at-all"'
    bed.wait_no_link(None, 30)
    daemon2 = Daemon(work, bed, bin_dir, "daemon-allow", f"allow: [{allow}]\n")
    daemon2.wait_ready(len(fleet_boards))
    env2 = fleet_env(daemon2)
    log(f"fleet: {args.connects} connects of {other_name}, not a fleet board")
    result["connect_device"] = connects(env2, True, bed, other, args.connects)
    log(f"fleet: {args.kills} scripts killed in the middle of a connect of {other_name}")
    result["kill"] = kill_tests(work, bed, daemon2, other_name, other, args.kills, None)
    log(f"fleet: {args.kills} scripts killed in the middle of a connect of {other_name} held {SLOW_CONNECT} longer")
    result["kill_slow"] = kill_tests(work, bed, daemon2, other_name, other, args.kills, SLOW_CONNECT)
    log(f"fleet: {args.kills} scripts killed when the link of {other_name} came up, its services not resolved")
    result["kill_link"] = kill_tests(work, bed, daemon2, other_name, other, args.kills, None, at="link")
    result["daemon_allow_exit"] = daemon2.stop()
    result["journal_allow"] = daemon2.journal()
    result["bluez_crashes"] = bed.crashes()
    bed.stop()
    return result


def fmt(value, unit: str = "", digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}{unit}"


def report(figures: dict) -> str:
    plain, fleet = figures["plain"], figures["fleet"]
    lines = [f"== bleak crowd on real BlueZ (VM {figures['vm']}): {figures['scripts']} scripts x {figures['seconds']:g} s, "
             f"each on its own board, one central; cycle = connect, read, write LED, disconnect; hung > {HANG:g} s"]
    head = f"{'tried':>6} {'ok':>5} {'failed':>6} {'hung':>5} {'median':>8}"
    lines.append(f"   {'script':<7}{'board':<9}| {'plain bleak':<{len(head)}} | through blefleetd")
    lines.append(f"   {'':<16}| {head} | {head}")

    def row(r: dict) -> str:
        return f"{r['tried']:>6} {r['ok']:>5} {r['failed']:>6} {r['hung']:>5} {fmt(r['median_cycle_s'], ' s'):>8}"
    for p, f in zip(plain["crowd"]["scripts"], fleet["crowd"]["scripts"]):
        lines.append(f"   {p['script']:<7}{p['board']:<9}| {row(p)} | {row(f)}")
    lines.append(f"   {'total':<16}| {row(plain['crowd']['totals'])} | {row(fleet['crowd']['totals'])}")
    pm, fm = plain["crowd"]["totals"]["median_cycle_s"], fleet["crowd"]["totals"]["median_cycle_s"]
    lines.append("   (through the fleet a script's connect to a fleet board leases the fleet's link to it: no radio connect)")
    lines.append(f"   median cycle time plain/fleet: {fmt(ratio(pm, fm), 'x')}; scripts with no completed cycle: "
                 f"plain {plain['crowd']['totals']['scripts_with_no_ok_cycle']}, fleet {fleet['crowd']['totals']['scripts_with_no_ok_cycle']}")
    for label, phase in (("plain", plain), ("fleet", fleet)):
        errors: Counter = Counter()
        for r in phase["crowd"]["scripts"]:
            errors.update(r["errors"])
            if r["exit_status"] not in (0, None) or r["killed_at_the_end"]:
                lines.append(f"   {label} script {r['script']}: exit {r['exit_status']}"
                             f"{', killed at the end' if r['killed_at_the_end'] else ''}")
        if errors:
            lines.append(f"   {label} errors:")
            for text, n in errors.most_common(8):
                lines.append(f"     {n:>4} x {text[:150]}")
    led = fleet["crowd"]["led_all"]
    lines.append(f"   `blectl led on --all` every ~{LED_EVERY:g} s during the fleet crowd: {led['calls']} calls, "
                 f"{led['all_boards_ok']} with every board ok ({led['failed_boards']} board failures); "
                 f"latency median {fmt(led['median_ms'], ' ms', 0)}, max {fmt(led['max_ms'], ' ms', 0)}")
    for text, n in led["board_errors"].items():
        lines.append(f"     {n:>4} x {text[:150]}")
    lines.append("")
    pr, fr = plain["read_rtt"], fleet["read_rtt"]
    lines.append(f"== temperature read round trip, one connected client ({figures['reads']} reads)")
    lines.append(f"   {'':<20}{'median':>10}{'p95':>10}{'reads':>7}{'errors':>8}")
    for label, r in (("plain bleak", pr), ("through blefleetd", fr)):
        lines.append(f"   {label:<20}{fmt(r['median_ms'], ' ms'):>10}{fmt(r['p95_ms'], ' ms'):>10}{r['reads']:>7}"
                     f"{len(r['errors']) + (1 if r['error'] else 0):>8}")
    lines.append(f"   fleet/plain: median {fmt(ratio(fr['median_ms'], pr['median_ms']), 'x')} (goal <= 1.3), "
                 f"p95 {fmt(ratio(fr['p95_ms'], pr['p95_ms']), 'x')}")
    lines.append("")
    lines.append(f"== connect (advertising -> services resolved: BleakClient(address).connect()), {figures['connects']} each")
    lines.append(f"   {'':<40}{'median':>9}{'p95':>9}{'min':>9}{'max':>9}{'ok':>6}")
    rows = (("plain bleak (includes bleak's scan)", plain["connect"]),
            ("fleet, a fleet board (blectl disconnect)", fleet["connect_board"]),
            ("fleet, a device not in the fleet", fleet["connect_device"]))
    for label, r in rows:
        lines.append(f"   {label:<40}{fmt(r['median_s'], ' s'):>9}{fmt(r['p95_s'], ' s'):>9}{fmt(r['min_s'], ' s'):>9}"
                     f"{fmt(r['max_s'], ' s'):>9}{r['ok']:>4}/{r['tried']}")
        if r["not_advertising_before"]:
            lines.append(f"     {r['not_advertising_before']} not advertising before (a link up, or the daemon not hearing the "
                         f"board within 30 s): not counted in the times")
        for text, n in r["errors"].items():
            lines.append(f"     {n} x {text[:150]}")
    lines.append(f"   plain/fleet median: board {fmt(ratio(plain['connect']['median_s'], fleet['connect_board']['median_s']), 'x')}, "
                 f"device {fmt(ratio(plain['connect']['median_s'], fleet['connect_device']['median_s']), 'x')}")
    releases = sorted(e["before"]["release_s"] for e in fleet["connect_board"].get("each", [])
                      if (e.get("before") or {}).get("release_s") is not None)
    if releases:
        lines.append(f"   link release (`blectl disconnect` until BlueZ shows no link), {len(releases)}: "
                     f"median {fmt(statistics.median(releases), ' s')}, worst {fmt(releases[-1], ' s')}")
    lines.append("")
    lines.append("== a script SIGKILLed in the middle of a connect through the fleet (when bluetoothd gets its "
                 "Device1.Connect), a device not in the fleet")
    for label, kill in ((f"connect as it comes", fleet["kill"]),
                        (f"connect held {SLOW_CONNECT} longer (testbed `fault slow`)", fleet["kill_slow"]),
                        ("killed when the link came up (Connected), services not resolved", fleet.get("kill_link"))):
        if kill is None:
            continue
        answers = Counter(f"{r['connect_answer'] or 'unanswered 30 s after the kill'}"
                          f"{' ' + r['connect_error'] if r['connect_error'] else ''}" for r in kill["each"])
        lines.append(f"   {label}: {kill['tried']} kills, {kill['killed_while_connecting']} while the Connect was pending "
                     f"({kill.get('killed_while_resolving', '-')} with the link up, its services not resolved); "
                     f"no link in BlueZ (busctl) after: {kill['left_no_link']}/{kill['tried']}; "
                     f"the next run ok: {kill['next_run_ok']}/{kill['tried']}")
        lines.append(f"     the pending Connect ended as {dict(answers)}; no link {[r['no_link_after_s'] for r in kill['each']]} s "
                     f"after the kill (None: still a link after a 30 s wait)")
    lines.append("")
    lines.append(f"bluetoothd crashes: plain phase {len(plain['bluez_crashes'])}, fleet phase {len(fleet['bluez_crashes'])}")
    for crash in plain["bluez_crashes"] + fleet["bluez_crashes"]:
        lines.append(f"   {str(crash)[:160]}")
    for label, key, code in (("blefleetd (all boards)", "journal", "daemon_exit"),
                             ("blefleetd (last board left out)", "journal_allow", "daemon_allow_exit")):
        j = fleet[key]
        lines.append(f"{label}: exit {fleet[code]}; its journal: {j['warnings']} warnings in {j['lines']} lines; adapter "
                     f"power-cycled as stuck {j['adapter_power_cycles']}x; discovery starts failed as 'timed out: cancelled' "
                     f"{j['discovery_start_cancelled']}x; org.bluez left the bus {j['bluez_left_the_bus']}x")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="Benchmarks/bleak-crowd/run",
        description="A crowd of independent bleak scripts on one central, plain and through blefleetd, side by "
                    "side on the real-BlueZ lane (issue 37); plus read round trip, connect time, and scripts "
                    "killed in the middle of a connect through the fleet.",
        epilog="Exit status 0 when it ran (the figures are the result), 1 when it could not run.")
    parser.add_argument("--vm", default=os.environ.get("BLEFLEET_TESTBED_VM"),
                        help="a running testbed VM (`scripts/testbed vm start`; default $BLEFLEET_TESTBED_VM, "
                             "else one is booted for the run and stopped after)")
    parser.add_argument("--seconds", type=float, default=90, help="how long each script cycles (default 90)")
    parser.add_argument("--scripts", type=int, default=4, help="scripts, one board each (default 4)")
    parser.add_argument("--reads", type=int, default=200, help="reads for the round trip (default 200)")
    parser.add_argument("--connects", type=int, default=10, help="connects timed each way (default 10)")
    parser.add_argument("--kills", type=int, default=3, help="scripts killed in the middle of a connect (default 3)")
    parser.add_argument("--json", default=DEFAULT_JSON, help=f"the figures (default {DEFAULT_JSON})")
    parser.add_argument("--logs", default=DEFAULT_LOGS,
                        help=f"the scripts' records and outputs and the daemon's logs are copied here (default {DEFAULT_LOGS})")
    parser.add_argument("--bin", default=None, help="blefleetd's and blectl's directory (default: the release build)")
    args = parser.parse_args()
    if args.scripts < 1 or args.seconds <= 0:
        parser.error("--scripts must be 1 or more and --seconds more than 0")

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    signal.signal(signal.SIGINT, on_term)

    work = Path(tempfile.mkdtemp(prefix="bfcrowd."))
    status = 0
    try:
        bin_dir = Path(args.bin) if args.bin else Path(run_cmd(
            ["swift", "build", "-c", "release", "--show-bin-path"], timeout=300).stdout.strip().splitlines()[-1])
        for tool in ("blefleetd", "blectl"):
            if not (bin_dir / tool).exists():
                raise CannotRun(f"{bin_dir / tool} is missing: build it (swift build -c release --product {tool})")
        vm = args.vm
        if not vm:
            log("no VM given: booting one (stopped at the end)")
            OWNED.vm = work / "vm"
            out = run_cmd([str(TESTBED), "vm", "start", "--vm-dir", str(OWNED.vm), "--boards", str(args.scripts),
                           "--centrals", "1"], timeout=900).stdout
            vm = str(OWNED.vm)
        figures = {"vm": vm, "scripts": args.scripts, "seconds": args.seconds, "reads": args.reads,
                   "connects": args.connects, "kills": args.kills, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                   "bleak": bleak_version(), "bin": str(bin_dir), "load_before": os.getloadavg()}
        figures["plain"] = plain_phase(work, vm, args)
        figures["fleet"] = fleet_phase(work, vm, bin_dir, args)
        figures["load_after"] = os.getloadavg()
        pm = figures["plain"]["crowd"]["totals"]["median_cycle_s"]
        fm = figures["fleet"]["crowd"]["totals"]["median_cycle_s"]
        figures["ratios"] = {
            "median_cycle_plain_over_fleet": ratio(pm, fm),
            "read_rtt_median_fleet_over_plain": ratio(figures["fleet"]["read_rtt"]["median_ms"],
                                                      figures["plain"]["read_rtt"]["median_ms"]),
            "read_rtt_p95_fleet_over_plain": ratio(figures["fleet"]["read_rtt"]["p95_ms"],
                                                   figures["plain"]["read_rtt"]["p95_ms"]),
            "connect_median_plain_over_fleet_board": ratio(figures["plain"]["connect"]["median_s"],
                                                           figures["fleet"]["connect_board"]["median_s"]),
            "connect_median_plain_over_fleet_device": ratio(figures["plain"]["connect"]["median_s"],
                                                            figures["fleet"]["connect_device"]["median_s"])}
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
        print(report(figures))
        print(f"\nfigures: {args.json}; the scripts' records and the daemon's logs: {args.logs}")
    except CannotRun as e:
        print(f"bleak-crowd: could not run: {e}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print("bleak-crowd: interrupted", file=sys.stderr)
        status = 130
    finally:
        OWNED.stop_all()
        logs = Path(args.logs)
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir(parents=True, exist_ok=True)
        for f in work.iterdir():
            if f.is_file() and f.suffix in (".jsonl", ".out", ".err", ".log", ".conf"):
                shutil.copy(f, logs / f.name)
        shutil.rmtree(work, ignore_errors=True)
    return status


def bleak_version() -> str:
    from importlib.metadata import version
    return version("bleak")


if __name__ == "__main__":
    sys.exit(main())
