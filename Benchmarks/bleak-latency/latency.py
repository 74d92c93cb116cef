"""GATT read round trip and notification latency, plain bleak vs the same script through the fleet
(`python3 -m blefleet.bleak`), side by side in one run on one testbed (issue 51; goal: the fleet
within 1.3x of plain). blefleetd runs all along and owns nano-01 (its `allow:` list); the
figures are taken on nano-02, a device the fleet does not own: a plain bleak session connects
to it, then a session through the fleet (its lease joins that link), both on one link and
both following its temperature.

  reads          RUNS batches of READS sequential temperature reads in each session, plain and
                 fleet alternating (plain, fleet, fleet, plain, ...): per side the median and
                 p95 of all reads, and each batch's median
  notifications  both sessions follow nano-02's temperature at once; the testbed changes the
                 temperature NOTES times (in process, no interpreter start); for each change:
                   change -> callback   from the request to the testbed to each client's callback
                                        (includes the wait for the board's next sensor tick,
                                        up to the notify interval, the same for both clients)
                   origin -> callback   from the board's own value change on the bus (the
                                        testbed's GATT application emitting PropertiesChanged,
                                        seen by an observer here) to each callback: the
                                        delivery path, BlueZ (and the fleet) to the script

Usage: latency.py [--real VM_DIR] [--runs 6] [--reads 50] [--notes 30] [--bin DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "testbed" / "tests"))
sys.path.insert(0, str(ROOT / "testbed"))

from dbus_fast import BusType, Message, MessageType  # noqa: E402,F401
from dbus_fast.aio import MessageBus  # noqa: E402

from support import HUMIDITY_PROFILE, Testbed  # noqa: E402

PY = str(ROOT / ".venv-testbed" / "bin" / "python")
PROBE = str(Path(__file__).resolve().parent / "probe.py")
BOARD = "nano-02"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


class Lab:
    def __init__(self, work: Path, real_vm: str | None, bin_dir: Path) -> None:
        options = ["--boards", "3", "--humidity", "--temperature", "distinct:20", "--owner-pid", str(os.getpid())]
        if real_vm:
            options += ["--real", "--vm", real_vm]
        self.testbed = Testbed(work / "tb", options, "real" if real_vm else "bluezoo")
        self.work = work
        self.socket = str(work / "d.sock")
        profiles = work / "profiles"
        profiles.mkdir()
        (profiles / "nano-humidity.yaml").write_text(HUMIDITY_PROFILE)
        (work / "blefleetd.conf").write_text(
            f"socket-group: root\nprofile-dir: {profiles}\nconnection-limit: 4\nallow: [nano-01]\n")
        env = dict(os.environ)
        if self.testbed.mgmt_socket:
            env["BLEFLEET_MGMT_SOCKET"] = self.testbed.mgmt_socket
        self.daemon = subprocess.Popen(
            [str(bin_dir / "blefleetd"), "--config", str(work / "blefleetd.conf"), "--socket", self.socket,
             "--state-dir", str(work / "state"), "--bus", self.testbed.bus_address, "--log-target", "stderr"],
            stdout=open(work / "blefleetd.log", "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 240
        while True:
            out = subprocess.run([str(bin_dir / "blectl"), "--socket", self.socket, "--json", "boards"],
                                 capture_output=True, text=True, timeout=30)
            if out.returncode == 0 and [b["state"] for b in json.loads(out.stdout)["boards"]] == ["ready"]:
                break
            assert self.daemon.poll() is None and time.monotonic() < deadline, "the fleet's board is not ready"
            time.sleep(0.2)

    def nudge(self) -> None:
        """A new RSSI in the board's next advertising reports, as a radio's varies: bleak's BlueZ
        scanner reports a device BlueZ already knows only when a property changes, and the
        testbed's controllers otherwise repeat the same RSSI (so a plain connect by address
        would not find the board again)."""
        self.rssi = -50 if getattr(self, "rssi", -50) != -50 else -51
        self.testbed.cli("board", "signal", BOARD, str(self.rssi))
        # A link let go of stays up a while (bluetoothd's 2 s disconnect timer); the board
        # advertises again once it is down, and the testbed's controllers report advertising
        # when a scan starts: the next client's scan must come after.
        path = f"/org/bluez/hci0/dev_{self.testbed.address(BOARD).replace(':', '_')}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            out = subprocess.run(["busctl", f"--address={self.testbed.bus_address}", "get-property", "org.bluez", path,
                                  "org.bluez.Device1", "Connected"], capture_output=True, text=True)
            if out.stdout.strip() != "b true":
                return
            time.sleep(0.1)

    def command(self, fleet: bool, *args: str) -> tuple[list[str], dict[str, str]]:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if fleet:
            env.update(BLEFLEET_SOCKET=self.socket, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent",
                       PYTHONPATH=str(ROOT / "python"))
            return [PY, "-m", "blefleet.bleak", PROBE, *args], env
        env["DBUS_SYSTEM_BUS_ADDRESS"] = self.testbed.bus_address
        return [PY, PROBE, *args], env

    def stop(self) -> None:
        self.daemon.terminate()
        try:
            self.daemon.wait(30)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
        self.testbed.stop()


class Session:
    """One probe session (plain or through the fleet): its notifications as they come, its
    read batches on request."""

    def __init__(self, side: str, process: asyncio.subprocess.Process) -> None:
        self.side = side
        self.process = process
        self.seen: dict[str, float] = {}
        self.results: asyncio.Queue[dict] = asyncio.Queue()
        self.ready = asyncio.Event()
        self.task = asyncio.create_task(self._pump())

    @classmethod
    async def start(cls, lab: Lab, side: str, address: str) -> "Session":
        lab.nudge()
        command, env = lab.command(side == "fleet", "session", address)
        err = open(lab.work / f"session-{side}.err", "wb")
        process = await asyncio.create_subprocess_exec(*command, env=env, stdin=asyncio.subprocess.PIPE,
                                                       stdout=asyncio.subprocess.PIPE, stderr=err)
        session = cls(side, process)
        done, _ = await asyncio.wait([asyncio.create_task(session.ready.wait()), session.task], timeout=180,
                                     return_when=asyncio.FIRST_COMPLETED)
        if not session.ready.is_set():
            process.kill()
            raise SystemExit(f"{side} session: {(lab.work / f'session-{side}.err').read_text()[-2000:]}")
        return session

    async def _pump(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = raw.decode().strip()
            if line == "ready":
                self.ready.set()
            elif line.startswith("n "):
                _, stamp, value = line.split()
                self.seen.setdefault(value, float(stamp))
            elif line.startswith("r "):
                self.results.put_nowait(json.loads(line[2:]))

    async def read(self, count: int) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(f"read {count}\n".encode())
        await self.process.stdin.drain()
        return await asyncio.wait_for(self.results.get(), 600)

    async def end(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 60)
        except TimeoutError:
            self.process.kill()
        self.task.cancel()


async def measure(lab: Lab, address: str, runs: int, count: int, notes: int) -> tuple[dict, dict]:
    """A plain session connects; a fleet session's lease joins its link: both on one link. Read
    batches alternate between them; then the testbed changes the temperature and both callbacks
    are timed against the change and the board's own emission (an observer on the bus)."""
    sessions = {"plain": await Session.start(lab, "plain", address)}
    sessions["fleet"] = await Session.start(lab, "fleet", address)
    figures: dict[str, dict] = {s: {"runs": [], "all": [], "errors": 0} for s in sessions}
    for run in range(runs):
        for side in ("plain", "fleet") if run % 2 == 0 else ("fleet", "plain"):
            result = await sessions[side].read(count)
            figures[side]["runs"].append(round(statistics.median(result["samples_ms"]), 2) if result["samples_ms"] else None)
            figures[side]["all"] += result["samples_ms"]
            figures[side]["errors"] += result["errors"]
            print(f"reads run {run + 1} {side}: median {figures[side]['runs'][-1]} ms", file=sys.stderr)

    path = f"/org/blefleet/testbed/{BOARD.replace('-', '_')}/service1/char0"
    bus = await MessageBus(bus_address=lab.testbed.bus_address).connect()
    origins: dict[str, float] = {}

    def on_message(message: Message) -> None:
        if (message.message_type == MessageType.SIGNAL and message.path == path
                and message.member == "PropertiesChanged" and "Value" in message.body[1]):
            origins.setdefault(bytes(message.body[1]["Value"].value).hex(), time.monotonic())
    bus.add_message_handler(on_message)
    await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                           interface="org.freedesktop.DBus", member="AddMatch", signature="s",
                           body=[f"type='signal',interface='org.freedesktop.DBus.Properties',path='{path}'"]))
    from blefleet_testbed.cli import request
    from blefleet_testbed.rundir import RunDir
    samples: dict[str, dict[str, list[float]]] = {s: {"change": [], "origin": []} for s in sessions}
    extra: list[float] = []
    missed = 0
    for index in range(notes):
        celsius = 30 + index % 60  # one signed byte on the air; not the value before
        value = bytes([celsius & 0xFF]).hex()
        origins.pop(value, None)
        for session in sessions.values():
            session.seen.pop(value, None)
        changed = time.monotonic()
        await asyncio.to_thread(request, RunDir(lab.testbed.run_dir), {"op": "temp", "board": BOARD, "celsius": celsius})
        deadline = time.monotonic() + 15
        while not all(value in s.seen for s in sessions.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        if not all(value in s.seen for s in sessions.values()) or value not in origins:
            missed += 1
            continue
        for side, session in sessions.items():
            samples[side]["change"].append((session.seen[value] - changed) * 1000)
            samples[side]["origin"].append((session.seen[value] - origins[value]) * 1000)
        extra.append((sessions["fleet"].seen[value] - sessions["plain"].seen[value]) * 1000)
    bus.disconnect()
    await sessions["fleet"].end()  # the fleet's lease ends before plain's link
    await sessions["plain"].end()
    return figures, {"samples": samples, "fleet_minus_plain": extra, "missed": missed}


def fmt(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {pct(values, 95):.1f}" if values else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", metavar="VM_DIR")
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--notes", type=int, default=30)
    parser.add_argument("--bin", default=str(ROOT / ".build" / "debug"))
    parser.add_argument("--out", default="/tmp/figures-51-latency.md")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bflat-", dir="/tmp"))
    lab = Lab(work, options.real, Path(options.bin))
    try:
        address = lab.testbed.address(BOARD)
        read_figures, note_figures = asyncio.run(measure(lab, address, options.runs, options.reads, options.notes))
    finally:
        lab.stop()
    p, f = read_figures["plain"], read_figures["fleet"]
    lane = "real BlueZ (VM, TCG)" if options.real else "BlueZoo"
    build = "release" if "release" in options.bin else "debug"
    lines = [f"## {lane}: plain bleak vs through the fleet ({build} blefleetd), {time.strftime('%Y-%m-%d %H:%M')}", "",
             f"Command: `Benchmarks/bleak-latency/run {'--real VM_DIR ' if options.real else ''}--runs {options.runs} "
             f"--reads {options.reads} --notes {options.notes}` (board {BOARD}, not the fleet's; blefleetd running all along)", "",
             "| figure | plain median / p95 (ms) | fleet median / p95 (ms) | fleet / plain (median) |", "|---|---|---|---|"]
    ratio = statistics.median(f["all"]) / statistics.median(p["all"]) if p["all"] and f["all"] else float("nan")
    lines.append(f"| GATT read round trip, {len(p['all'])} + {len(f['all'])} reads, {options.runs} alternating batches each "
                 f"| {fmt(p['all'])} | {fmt(f['all'])} | {ratio:.2f}x |")
    s = note_figures["samples"]
    for kind, label in (("change", "notification: temperature change -> callback"),
                        ("origin", "notification: board's value change on the bus -> callback")):
        a, b = s["plain"][kind], s["fleet"][kind]
        r = statistics.median(b) / statistics.median(a) if a and b else float("nan")
        lines.append(f"| {label} ({len(a)} changes) | {fmt(a)} | {fmt(b)} | {r:.2f}x |")
    lines += ["", f"Per read run (median ms), in order run by run: plain {p['runs']}, fleet {f['runs']}; read errors: "
              f"plain {p['errors']}, fleet {f['errors']}.",
              f"The same notification, fleet callback minus plain callback: median {statistics.median(note_figures['fleet_minus_plain']):.1f} ms, "
              f"p95 {pct(note_figures['fleet_minus_plain'], 95):.1f} ms; changes missed: {note_figures['missed']}."
              if note_figures["fleet_minus_plain"] else f"No notification pairs (missed {note_figures['missed']}).", ""]
    text = "\n".join(lines) + "\n"
    with open(options.out, "a") as out:
        out.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
