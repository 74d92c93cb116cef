"""Hung central controllers on the real lane, ten in a row (issue 52): two centrals, six
boards spread over both, blefleetd (release build) on both adapters, a client switching every
LED through it once a second (`led.set` of all boards, 3 s deadline: "served" means every
board answered ok). Each hang goes to the adapter holding the most links:
  dead        `fault hang ADAPTER --until-reset`: it answers nothing, its links end at the
              boards (a supervision timeout), so they advertise again
  links-live  `fault hang ADAPTER --until-reset --links-live`: its transport stalls, its link
              layer keeps every link up at the boards (they do not advertise) until a reset
Per hang (seconds after the hang began): found (the daemon's status shows the adapter stuck),
reset (its recovery's step `reset` seen, or it recovered by a lesser step), reset done (the
daemon saw the controller go down for it: the kernel's close waits for commands under way,
so this comes later than the step), served (the end of
the first led.set begun after "found" that every board answered ok), LEDs (then, the client
paused, every board's LED as the testbed reads it the one last asked for) and LEDs after the
reset (from "reset done"); then the daemon's
fds and the central's links, for leaks.
Usage: Benchmarks/hang/run --vm DIR [--bin DIR] [--kind dead|links-live] [--hangs N] [--boards N] [--idle]
Figures to /tmp/blefleet-bench-hang-KIND.json, the daemon's log to /tmp/blefleet-bench-hang-KIND.log.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("crowd_bench", ROOT / "Benchmarks" / "bleak-crowd" / "bench.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


class Bed(bench.Bed):
    """The crowd benchmark's testbed with two centrals."""

    def __init__(self, run_dir: Path, vm: str, boards: int) -> None:  # noqa: D107
        self.run_dir = run_dir
        self.stopped = False
        bench.OWNED.beds.append(self)
        out = bench.run_cmd([str(bench.TESTBED), "start", "--real", "--vm", vm, "--boards", str(boards), "--centrals", "2",
                             "--run-dir", str(run_dir), "--owner-pid", str(os.getpid())], timeout=600).stdout
        self.exports = {}
        for line in out.splitlines():
            if line.startswith("export ") and "=" in line:
                key, value = line.removeprefix("export ").split("=", 1)
                self.exports[key] = value.strip("'\"")
        self.bus = self.exports["DBUS_SYSTEM_BUS_ADDRESS"]
        self.mgmt = self.exports.get("BLEFLEET_MGMT_SOCKET")
        state = self.state()
        self.boards = [(b["name"], b["address"]) for b in state["boards"]]
        self.centrals = {f"/org/bluez/{c['name']}" for c in state.get("centrals", [state["central"]])}


def status(daemon) -> dict:
    out = daemon.blectl("--json", "status", timeout=20)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def adapters(st: dict) -> dict:
    return {a["name"]: a for a in st.get("adapters", [])}


class Client(threading.Thread):
    """led.set of every board once a second, on and off in turn, 3 s deadline."""

    def __init__(self, daemon, boards: int) -> None:
        super().__init__(daemon=True)
        self.d, self.boards = daemon, boards
        self.stop_flag = threading.Event()
        self.paused = threading.Event()  # set: no calls (an idle fleet, as the real-lane test's)
        self.busy = threading.Event()  # set while a call is under way
        self.calls: list[tuple[float, float, bool, int]] = []  # (began, ended, on, ok boards)
        self.on = True

    def run(self) -> None:
        while not self.stop_flag.is_set():
            if self.paused.is_set():
                self.stop_flag.wait(0.05)
                continue
            self.busy.set()
            began = time.monotonic()
            on = self.on
            out = self.d.blectl("rpc", "led.set", json.dumps({"select": "all", "on": on, "timeoutMs": 3000}),
                                timeout=30)
            ok = 0
            try:
                ok = int(json.loads(out.stdout).get("totals", {}).get("ok", 0))
            except (ValueError, AttributeError):
                pass
            self.calls.append((began, time.monotonic(), on, ok))
            self.busy.clear()
            self.on = not on
            self.stop_flag.wait(max(0.0, 1.0 - (time.monotonic() - began)))


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def reset_done(log: Path, adapter: str, since: datetime) -> float | None:
    """Seconds from `since` until the daemon saw `adapter` go down for its reset (its log's
    "adapter powered off" line): when the controller was reset, which the step's start
    (`reset_s`) is not (the kernel's close waits for the commands it has under way)."""
    for line in log.read_text(errors="replace").splitlines():
        if "adapter powered off" not in line or f"ble.adapter={adapter}" not in line:
            continue
        try:
            at = datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%f%z")
        except ValueError:
            continue
        if at >= since:
            return round((at - since).total_seconds(), 2)
    return None


def one_hang(number: int, kind: str, bed: Bed, daemon, client: Client, boards: int, idle: bool) -> dict:
    before = adapters(status(daemon))
    target = max(("hci0", "hci1"), key=lambda n: before.get(n, {}).get("slotsUsed", 0))
    earlier = (before.get(target, {}).get("lastRecovery") or {}).get("started")
    held = before.get(target, {}).get("slotsUsed", 0)
    argv = ["fault", "hang", target, "--until-reset"] + (["--links-live"] if kind == "links-live" else [])
    if idle:
        client.paused.set()
    t0, wall0 = time.monotonic(), datetime.now(timezone.utc)
    bed.cli(*argv)
    found = reset = served = leds = None
    step = symptom = None
    deadline = t0 + 60
    while time.monotonic() < deadline:
        now = time.monotonic() - t0
        entry = adapters(status(daemon)).get(target, {})
        recovery = entry.get("lastRecovery") or {}
        fresh = recovery.get("started") not in (None, earlier)
        if found is None and (entry.get("health") in ("recovering", "failed") or fresh):
            found = round(now, 2)
        if fresh:
            step, symptom = recovery.get("step"), recovery.get("symptom")
            if reset is None and (step == "reset" or recovery.get("recovered")):
                reset = round(now, 2)
                client.paused.clear()
        if served is None and found is not None:
            # The first call begun once the daemon found the adapter stuck (a call begun just
            # after the hang may still find every board answering) that every board answered.
            done = [c for c in client.calls if c[0] >= t0 + found and c[3] == boards]
            if done:
                served = round(done[0][1] - t0, 2)
        if served is not None and reset is not None:
            # The LED every board must show: the last one asked for (the client waits meanwhile).
            client.paused.set()
            while client.busy.is_set():
                time.sleep(0.05)
            want = 1 if client.calls[-1][2] else 0
            while time.monotonic() < deadline:
                if all(b.get("led") == want for b in bed.state()["boards"]):
                    leds = round(time.monotonic() - t0, 2)
                    break
                time.sleep(0.2)
            break
        time.sleep(0.2)
    client.paused.clear()
    after = adapters(status(daemon))
    done = reset_done(daemon.log, target, wall0)
    return {"hang": number, "kind": kind, "adapter": target, "links_held": held, "symptom": symptom, "step": step,
            "found_s": found, "reset_s": reset, "reset_done_s": done, "served_s": served, "leds_s": leds,
            "leds_after_reset_s": round(leds - done, 2) if leds is not None and done is not None else None,
            "adapters_after": {n: a.get("slotsUsed") for n, a in after.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(prog="Benchmarks/hang/run", description=__doc__.split("\n")[0])
    parser.add_argument("--vm", required=True)
    parser.add_argument("--bin", default=str(ROOT / ".build" / "release"))
    parser.add_argument("--kind", choices=("dead", "links-live"), default="links-live")
    parser.add_argument("--hangs", type=int, default=10)
    parser.add_argument("--boards", type=int, default=6)
    parser.add_argument("--settle", type=float, default=5,
                        help="seconds between the boards' being ready and the first hang (default 5; the "
                             "real-lane test hangs at once)")
    parser.add_argument("--idle", action="store_true",
                        help="no calls from the hang until its reset is seen (as the real-lane test's idle fleet)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    out_json = Path(args.json or f"/tmp/blefleet-bench-hang-{args.kind}.json")
    work = Path(tempfile.mkdtemp(prefix="bfhang-", dir="/tmp"))
    bed = Bed(work / "tb", str(Path(args.vm).resolve()), args.boards)
    daemon = bench.Daemon(work, bed, Path(args.bin).resolve(), "daemon", "adapter: [hci0, hci1]\n")
    result: dict = {"kind": args.kind, "boards": args.boards, "hangs": []}
    client = None
    try:
        result["ready_s"] = daemon.wait_ready(args.boards)
        time.sleep(args.settle)  # every subscription made, the links chatty
        result["fds_start"] = fds(daemon.process.pid)
        result["links_start"] = len(bed.links())
        client = Client(daemon, args.boards)
        client.start()
        for number in range(1, args.hangs + 1):
            hang = one_hang(number, args.kind, bed, daemon, client, args.boards, args.idle)
            result["hangs"].append(hang)
            print(f"hang {number} ({args.kind}, {hang['adapter']} held {hang['links_held']}): {hang['symptom']} "
                  f"found {hang['found_s']} s, {hang['step']} {hang['reset_s']} s (done {hang['reset_done_s']} s), every board served "
                  f"{hang['served_s']} s, every LED {hang['leds_s']} s; links after {hang['adapters_after']}", flush=True)
            bench.run_cmd([str(bench.TESTBED), "fault", "clear", "--run-dir", str(bed.run_dir)], timeout=60, check=False)
            daemon.wait_ready(args.boards, timeout=90)
            time.sleep(5)
            out_json.write_text(json.dumps(result, indent=1))
        client.stop_flag.set()
        client.join(30)
        time.sleep(2)
        result["fds_end"] = fds(daemon.process.pid)
        result["links_end"] = len(bed.links())
    finally:
        if client:
            client.stop_flag.set()
        daemon.stop()
        shutil.copy(daemon.log, f"/tmp/blefleet-bench-hang-{args.kind}.log")
        bed.stop()
        out_json.write_text(json.dumps(result, indent=1))
    hangs = result["hangs"]

    def fig(key: str) -> str:
        values = [h[key] for h in hangs if h[key] is not None]
        missing = len(hangs) - len(values)
        if not values:
            return f"{key[:-2]}: -"
        return (f"{key[:-2]} median {statistics.median(values):.1f} s, worst {max(values):.1f} s"
                + (f" ({missing} never)" if missing else ""))
    print(f"== {len(hangs)} hangs ({args.kind}): " + "; ".join(fig(k) for k in ("found_s", "reset_s", "reset_done_s", "served_s", "leds_s", "leds_after_reset_s")))
    print(f"   daemon fds {result.get('fds_start')} -> {result.get('fds_end')}; central links "
          f"{result.get('links_start')} -> {result.get('links_end')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
