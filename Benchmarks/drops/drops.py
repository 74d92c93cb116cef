"""A board-side drop schedule on the real lane (issue 55): blefleetd (release build) holds
every board of a fresh testbed, a client switches every LED on and off through it, and each
board's link is lost again and again (the testbed's `fault drop all --every S`: a supervision
timeout at both ends, as a board that walks out of range) for a while; then the drops stop.
Per run:
  bluetoothd deaths nobody asked for (the VM's record), each with the daemon's log lines of the
    seconds before it (what it was doing), bluetoothd's last lines and its core's backtrace
  the daemon's "link lost" lines (links dropped under it)
  drops end -> every board linked again and its LED the one asked for last (the referee:
    the testbed's own state)
  led.set --all calls answered ok / failed during the schedule
Usage: Benchmarks/drops/run --vm DIR [--bin DIR] [--runs N] [--seconds S] [--every S] [--boards N]
Prints one line per run and a summary; the figures go to /tmp/blefleet-bench-drops.json.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "testbed"))
spec = importlib.util.spec_from_file_location("crowd_bench", ROOT / "Benchmarks" / "bleak-crowd" / "bench.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
from blefleet_testbed.lanes import crash_report, unasked  # noqa: E402


def daemon_lines_before(log: Path, clock: str, seconds: int = 3) -> list[str]:
    """The daemon's log lines stamped in the `seconds` before the wall-clock time `clock`
    (HH:MM:SS, the VM's record of a crash), and in that second."""
    try:
        at = datetime.strptime(clock, "%H:%M:%S")
    except ValueError:
        return []
    stamps = {(at - timedelta(seconds=s)).strftime("%H:%M:%S") for s in range(seconds + 1)}
    lines = log.read_text(errors="replace").splitlines()
    return [line[:240] for line in lines if any(f"T{s}" in line[:40] for s in stamps)][-12:]


def one_run(number: int, args, vm: Path, bin_dir: Path) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"bfdrops{number}-", dir="/tmp"))
    bed = bench.Bed(work / "tb", str(vm), args.boards)
    daemon = bench.Daemon(work, bed, bin_dir, "daemon")
    result: dict = {"run": number, "seed": number}
    try:
        result["ready_s"] = daemon.wait_ready(args.boards)
        names = [name for name, _ in bed.boards]
        crashes_before = len(bed.crashes())
        calls: dict = {"ok": 0, "failed": 0}
        desired = {"on": None}
        stop = threading.Event()

        def client() -> None:
            on = True
            while not stop.is_set():
                out = daemon.blectl("led", "on" if on else "off", "--all", "--timeout", "10", timeout=60)
                calls["ok" if out.returncode == 0 else "failed"] += 1
                if out.returncode != 0:
                    calls["last_failure"] = (out.stdout + out.stderr).strip()[-300:]
                desired["on"] = on
                on = not on
                stop.wait(2)
        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        bed.cli("fault", "drop", "all", "--every", str(args.every), "--seed", str(number))
        started = time.monotonic()
        time.sleep(args.seconds)  # the schedule runs in the VM meanwhile
        bed.cli("fault", "drop", "all", "--every", "0")
        ended = time.monotonic()
        stop.set()
        thread.join(90)
        result["schedule_s"] = round(ended - started, 1)
        result["led_calls"] = dict(calls)
        # One last call after the schedule: the LED every board must show.
        last = daemon.blectl("led", "on", "--all", "--timeout", "20", timeout=60)
        result["last_call_ok"] = last.returncode == 0
        back = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = bed.state()
            links = bed.links()
            addresses = {b["address"] for b in state["boards"]}
            if all(b.get("led") == 1 for b in state["boards"]) and addresses <= set(links):
                back = round(time.monotonic() - ended, 2)
                break
            time.sleep(0.25)
        result["all_back_after_drops_s"] = back
        log = daemon.log
        text = log.read_text(errors="replace")
        result["link_lost_lines"] = text.count("link lost")
        all_crashes = bed.crashes()[crashes_before:]
        died = unasked(all_crashes)
        result["bluetoothd_crashes"] = [
            {"line": line, "report": crash_report(vm, line),
             "daemon_before": daemon_lines_before(log, line.split(" ", 1)[0])} for line in died]
        result["boards"] = names
    finally:
        result["daemon_exit"] = daemon.stop()
        try:
            (Path("/tmp/blefleet-bench-drops.logs")).mkdir(exist_ok=True)
            (Path("/tmp/blefleet-bench-drops.logs") / f"daemon-{number}.log").write_text(daemon.log.read_text(errors="replace"))
        except OSError:
            pass
        bed.stop()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(prog="Benchmarks/drops/run", description=__doc__.split("\n")[0])
    parser.add_argument("--vm", required=True, help="a running testbed VM (scripts/testbed vm start)")
    parser.add_argument("--bin", default=str(ROOT / ".build" / "release"), help="blefleetd's and blectl's directory")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--first", type=int, default=1, help="the first run's number (its seed)")
    parser.add_argument("--seconds", type=float, default=60, help="how long the drops go on (default 60)")
    parser.add_argument("--every", type=float, default=3, help="each board's mean time between drops (default 3 s)")
    parser.add_argument("--boards", type=int, default=6)
    parser.add_argument("--json", default="/tmp/blefleet-bench-drops.json")
    args = parser.parse_args()
    vm, bin_dir = Path(args.vm).resolve(), Path(args.bin).resolve()
    runs = []
    for number in range(args.first, args.first + args.runs):
        run = one_run(number, args, vm, bin_dir)
        runs.append(run)
        print(f"run {number}: bluetoothd crashes {len(run.get('bluetoothd_crashes', []))}; "
              f"links lost (daemon) {run.get('link_lost_lines')}; led calls {run.get('led_calls')}; "
              f"every board back with its LED {run.get('all_back_after_drops_s')} s after the drops", flush=True)
        for crash in run.get("bluetoothd_crashes", []):
            print("   " + crash["report"].replace("\n", "\n   "))
            print("   the daemon before it: " + " | ".join(crash["daemon_before"]))
        Path(args.json).write_text(json.dumps(runs, indent=1))
    backs = [r["all_back_after_drops_s"] for r in runs if r.get("all_back_after_drops_s") is not None]
    print(f"== {len(runs)} runs: bluetoothd crashes {sum(len(r.get('bluetoothd_crashes', [])) for r in runs)}; "
          f"every board back after the drops: median {statistics.median(backs) if backs else '-'} s, "
          f"worst {max(backs) if backs else '-'} s, not back {len(runs) - len(backs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
