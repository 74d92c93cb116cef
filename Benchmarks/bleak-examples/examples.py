"""bleak's own examples, unchanged, plain (bleak on the testbed's BlueZ) and through the fleet
(`python3 -m blefleet.bleak`, the daemon's socket, no BlueZ bus), side by side on one testbed,
against a board the fleet owns and a device it does not (the daemon's `allow:` list decides).
The examples are read from a bleak checkout (never copied into this repository).

  plain phase   no daemon: every board is a device like any other, advertising
  fleet phase   blefleetd owns nano-01 and nano-02 (linked, so not advertising); nano-03 to
                nano-05 are strangers; each example runs through the launcher

Examples that run until stopped (detection_callback, scan_iterator) are given SIGINT after a
while, on both sides alike; disconnect_callback gets its board dropped by the testbed once it
says it is waiting, then restored. The story of a run: its exit status, its last exception, its
output with timestamps, values, RSSI and counts masked. Writes a Markdown table and each run's
output (a directory beside the table).

Usage: examples.py --bleak CHECKOUT [--real VM_DIR] [--out FILE] [--only NAME,...] [--bin DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "testbed" / "tests"))
sys.path.insert(0, str(ROOT / "testbed"))

from support import HUMIDITY_PROFILE, Testbed  # noqa: E402

PY = str(ROOT / ".venv-testbed" / "bin" / "python")
TEMPERATURE = "d888a9c3-f3cc-11ed-a05b-0242ac120003"
FLEET = ("nano-01", "nano-02")
STRANGERS = ("nano-03", "nano-04")

# Examples not run, and why.
SKIPPED = {
    "kivy/": "Kivy app for Android (buildozer); not a Linux script",
    "__init__.py": "not an example",
}


@dataclass
class Case:
    example: str
    args: list[str]             # {A}, {B}: the target boards' addresses
    target: str                 # "fleet", "stranger" or "-" (scan only)
    boards: tuple[str, ...] = ()
    interrupt_after: float | None = None   # SIGINT after this many seconds
    drop_on: str | None = None  # drop the board when this text is printed
    timeout: float = 60


def cases(scale: float) -> list[Case]:
    made: list[Case] = [
        Case("discover.py", [], "-"),
        Case("detection_callback.py", [], "-", interrupt_after=7 * scale),
        Case("scan_iterator.py", [], "-", interrupt_after=7 * scale),
        Case("uart_service.py", [], "-"),
        Case("mtu_size.py", [], "-"),
    ]
    for target, names in (("fleet", FLEET), ("stranger", STRANGERS)):
        one = (names[0],)
        made += [
            Case("service_explorer.py", ["--address", "{A}"], target, one),
            Case("enable_notifications.py", ["--address", "{A}", TEMPERATURE], target, one),
            Case("async_callback_with_queue.py", ["--address", "{A}", TEMPERATURE], target, one),
            Case("disconnect_callback.py", ["--address", "{A}"], target, one, drop_on="Sleeping until device disconnects"),
            Case("two_devices.py", ["--by-address", "{A}", TEMPERATURE, "{B}", TEMPERATURE], target, names),
            Case("sensortag.py", ["{A}"], target, one),
            Case("philips_hue.py", ["{A}"], target, one),
        ]
    return made


@dataclass
class Run:
    status: int
    output: str
    seconds: float
    story: list[str] = field(default_factory=list)
    exception: str = ""


TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


def normalize(line: str, addresses: dict[str, str]) -> str:
    line = TIMESTAMP.sub("", line)
    for address, name in addresses.items():
        line = line.replace(address, name)
    line = re.sub(r"bytearray\(b'.*?'\)|bytearray\(b\".*?\"\)", "bytearray(…)", line)
    line = re.sub(r"b'(\\x[0-9a-f]{2}|[^'])*'", "b'…'", line)
    line = re.sub(r"\b1\d{9}\.\d+", "<time>", line)
    line = re.sub(r"(rssi=|RSSI: |rssi: )-?\d+", r"\1<n>", line)
    line = re.sub(r"tx_power=-?\d+", "tx_power=<n>", line)
    line = re.sub(r"\s+ \d+\. ", " <n>. ", line)
    line = re.sub(r"Value: .*$", "Value: <v>", line)
    return line.rstrip()


def story(output: str, addresses: dict[str, str]) -> tuple[list[str], str]:
    """The run's lines, normalized, repeats collapsed; its last exception (type: message)."""
    lines: list[str] = []
    exception = ""
    traceback = False
    for raw in output.splitlines():
        if raw.startswith("Traceback"):
            traceback = True
            continue
        if traceback and (raw.startswith(" ") or raw.startswith("During handling") or not raw.strip()):
            continue
        if traceback:
            exception = normalize(raw, addresses)
            traceback = False
            lines.append(f"raised {exception.split(':')[0]}")
            continue
        line = normalize(raw, addresses)
        if line and (not lines or lines[-1] != line):
            lines.append(line)
    return lines, exception


def _sigint_default() -> None:
    """A run started in the background of a shell inherits SIGINT ignored: the example gets
    Ctrl-C's default, as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Lab:
    def __init__(self, work: Path, real_vm: str | None, bin_dir: Path) -> None:
        self.work = work
        self.bin = bin_dir
        options = ["--boards", "5", "--humidity", "--temperature", "distinct:-1", "--owner-pid", str(os.getpid())]
        if real_vm:
            options += ["--real", "--vm", real_vm]
        self.options, self.lane = options, "real" if real_vm else "bluezoo"
        self.testbed = Testbed(work / "tb", options, self.lane)
        self.scale = 4.0 if real_vm else 1.0
        self.addresses = {self.testbed.address(f"nano-{i:02d}"): f"nano-{i:02d}" for i in range(1, 6)}
        self.socket = str(work / "d.sock")
        self.daemon: subprocess.Popen[bytes] | None = None
        profiles = work / "profiles"
        profiles.mkdir()
        (profiles / "nano-humidity.yaml").write_text(HUMIDITY_PROFILE)
        # Two of the five boards are the fleet's; room for the fleet's two links and two lent.
        (work / "blefleetd.conf").write_text(
            f"socket-group: root\nprofile-dir: {profiles}\nconnection-limit: 5\nleases-per-user: 4\n"
            f"allow: [{', '.join(FLEET)}]\n")

    def fresh_testbed(self) -> None:
        """The testbed again from scratch (BlueZ's device cache wiped): each phase starts from
        the same BlueZ, not one that remembers the services of the devices the other phase
        connected (BlueZ then lists them among a device's UUIDs, and a scan shows them)."""
        self.testbed.stop()
        shutil.rmtree(self.work / "tb", ignore_errors=True)
        self.testbed = Testbed(self.work / "tb", self.options, self.lane)

    def address(self, name: str) -> str:
        return next(a for a, n in self.addresses.items() if n == name)

    def start_daemon(self) -> None:
        env = dict(os.environ)
        if self.testbed.mgmt_socket:
            env["BLEFLEET_MGMT_SOCKET"] = self.testbed.mgmt_socket
        log = open(self.work / "blefleetd.log", "ab")
        self.daemon = subprocess.Popen(
            [str(self.bin / "blefleetd"), "--config", str(self.work / "blefleetd.conf"), "--socket", self.socket,
             "--state-dir", str(self.work / "state"), "--bus", self.testbed.bus_address, "--log-target", "stderr"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.wait_fleet_ready()

    def wait_fleet_ready(self) -> None:
        deadline = time.monotonic() + 60 * self.scale
        while time.monotonic() < deadline:
            assert self.daemon is not None and self.daemon.poll() is None, "blefleetd exited"
            out = subprocess.run([str(self.bin / "blectl"), "--socket", self.socket, "--json", "boards"],
                                 capture_output=True, text=True, timeout=30)
            if out.returncode == 0:
                boards = json.loads(out.stdout)["boards"]
                if len(boards) == len(FLEET) and all(b["state"] == "ready" for b in boards):
                    return
            time.sleep(0.2)
        raise SystemExit("the fleet's boards did not become ready")

    def stop_daemon(self) -> None:
        if self.daemon is not None:
            self.daemon.terminate()
            self.daemon.wait(30)
            self.daemon = None

    def wait_present(self, names: tuple[str, ...]) -> None:
        """After a drop and restore a board is found again only once it is powered again."""
        deadline = time.monotonic() + 30 * self.scale
        while time.monotonic() < deadline:
            boards = {b["name"]: b for b in self.testbed.state()["boards"]}
            if all(boards[n]["present"] for n in names):
                return
            time.sleep(0.2)

    def wait_unlinked(self, names: tuple[str, ...]) -> None:
        """A link let go of stays up a while (bluetoothd's 2 s disconnect timer), and the
        testbed's controllers report advertising when a scan starts: a plain run's scan must
        start after its boards' links are down, or it never hears them (a testbed trait; a
        radio reports advertising all along)."""
        deadline = time.monotonic() + 30
        for name in names:
            path = f"/org/bluez/hci0/dev_{self.address(name).replace(':', '_')}"
            while time.monotonic() < deadline:
                out = subprocess.run(["busctl", f"--address={self.testbed.bus_address}", "get-property", "org.bluez",
                                      path, "org.bluez.Device1", "Connected"], capture_output=True, text=True)
                if out.stdout.strip() != "b true":
                    break
                time.sleep(0.1)

    def run(self, case: Case, via_fleet: bool, examples: Path) -> Run:
        args = [a.replace("{A}", self.address(case.boards[0]) if case.boards else "")
                 .replace("{B}", self.address(case.boards[-1]) if case.boards else "") for a in case.args]
        # A new RSSI in the boards' next advertising reports, as a radio's varies: bleak's BlueZ
        # scanner reports a device BlueZ already knows only when a property changes, and the
        # testbed's controllers otherwise repeat the same RSSI (plain bleak would not find a
        # board it has just let go of).
        self.rssi = -50 if getattr(self, "rssi", -50) != -50 else -51
        self.testbed.cli("board", "signal", "all", str(self.rssi))
        script = str(examples / case.example)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if via_fleet:
            command = [PY, "-m", "blefleet.bleak", script, *args]
            # As a client that cannot reach BlueZ: whatever went around the daemon would fail.
            env.update(BLEFLEET_SOCKET=self.socket, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent",
                       PYTHONPATH=str(ROOT / "python"))
        else:
            command = [PY, script, *args]
            env["DBUS_SYSTEM_BUS_ADDRESS"] = self.testbed.bus_address
        start = time.monotonic()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, cwd=str(examples), preexec_fn=_sigint_default)
        assert process.stdout is not None
        chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: process.stdout.read1(4096), b"")), daemon=True)
        reader.start()
        dropped, interrupted, killed = False, 0.0, ""
        limit = case.timeout * self.scale
        while process.poll() is None:
            elapsed = time.monotonic() - start
            if case.drop_on and not dropped and case.drop_on.encode() in b"".join(chunks):
                self.testbed.cli("board", "drop", case.boards[0])
                dropped = True
            if case.interrupt_after is not None and not interrupted and elapsed > case.interrupt_after:
                process.send_signal(signal.SIGINT)
                interrupted = elapsed
            if interrupted and elapsed > interrupted + 15 * self.scale:
                process.kill()
                killed = f"\n[still running {15 * self.scale:.0f} s after SIGINT: killed]\n"
                break
            if elapsed > limit:
                process.kill()
                killed = f"\n[killed after {limit:.0f} s]\n"
                break
            time.sleep(0.05)
        process.wait()
        reader.join(10)
        output = b"".join(chunks).decode(errors="replace") + killed
        seconds = time.monotonic() - start
        if dropped:
            self.testbed.cli("board", "restore", case.boards[0])
        lines, exception = story(output, self.addresses)
        return Run(process.returncode, output, seconds, lines, exception)


def summary(run: Run) -> str:
    shown = run.story[:8]
    more = f" / … ({len(run.story) - 8} more lines)" if len(run.story) > 8 else ""
    text = " / ".join(shown) + more
    return f"exit {run.status}, {run.seconds:.1f} s: {text}".replace("|", "\\|")


def same(plain: Run, fleet: Run) -> bool:
    return plain.status == fleet.status and sorted(set(plain.story)) == sorted(set(fleet.story))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bleak", required=True, help="a checkout of bleak's repository (its examples folder is read)")
    parser.add_argument("--real", metavar="VM_DIR", help="the real lane: a running `scripts/testbed vm start` VM")
    parser.add_argument("--out", default="/tmp/figures-51-examples.md")
    parser.add_argument("--only", help="comma-separated example file names")
    parser.add_argument("--bin", default=str(ROOT / ".build" / "debug"), help="where blefleetd and blectl are")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bfex-", dir="/tmp"))
    examples = Path(options.bleak) / "examples"
    if not examples.is_dir():
        # A bare repository (a mirror): its examples as committed, read into the run's folder.
        archive = subprocess.run(["git", "-C", options.bleak, "archive", "HEAD", "examples"], capture_output=True)
        if archive.returncode != 0:
            raise SystemExit(f"no examples folder in {options.bleak}")
        subprocess.run(["tar", "-x", "-C", str(work)], input=archive.stdout, check=True)
        examples = work / "examples"
    lab = Lab(work, options.real, Path(options.bin))
    lane = "real BlueZ (VM)" if options.real else "BlueZoo"
    chosen = [c for c in cases(lab.scale) if not options.only or c.example in options.only.split(",")]
    logs = Path(options.out).with_suffix("")
    logs = logs.parent / f"{logs.name}.logs"
    logs.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, Run]] = {}
    try:
        for index, case in enumerate(chosen):  # no daemon: every board is anyone's
            lab.wait_present(case.boards or FLEET + STRANGERS)
            lab.wait_unlinked(case.boards or FLEET + STRANGERS)
            results[index] = {"plain": lab.run(case, False, examples)}
            print(f"plain {case.example} {case.target}: exit {results[index]['plain'].status}", file=sys.stderr)
        lab.fresh_testbed()
        lab.start_daemon()
        for index, case in enumerate(chosen):
            if case.target == "stranger":
                lab.wait_present(case.boards)
            results[index]["fleet"] = lab.run(case, True, examples)
            if case.drop_on and case.target == "fleet":
                lab.wait_fleet_ready()
            print(f"fleet {case.example} {case.target}: exit {results[index]['fleet'].status}", file=sys.stderr)
    finally:
        lab.stop_daemon()
        lab.testbed.stop()
        shutil.copy(work / "blefleetd.log", logs / f"blefleetd-{'real' if options.real else 'bluezoo'}.log") \
            if (work / "blefleetd.log").exists() else None
        shutil.rmtree(work, ignore_errors=True)
    rows = []
    for index, case in enumerate(chosen):
        plain, fleet = results[index].get("plain"), results[index].get("fleet")
        if plain is None or fleet is None:
            continue
        boards = ", ".join(case.boards) or "(scan)"
        for side, run in (("plain", plain), ("fleet", fleet)):
            (logs / f"{'real' if options.real else 'bluezoo'}-{case.example[:-3]}-{case.target}-{side}.txt").write_text(run.output)
        args = " ".join(case.args).replace(TEMPERATURE, "TEMP").replace("{A}", case.boards[0] if case.boards else "") \
            .replace("{B}", case.boards[-1] if case.boards else "")
        rows.append(f"| {case.example} | {args or '-'} | {case.target}: {boards} | {summary(plain)} | {summary(fleet)} | "
                    f"{'yes' if same(plain, fleet) else 'NO'} |")
    version = subprocess.run([PY, "-c", "import importlib.metadata as m; print(m.version('bleak'))"],
                             capture_output=True, text=True).stdout.strip()
    head = [f"## {lane} — bleak's examples, plain vs through the fleet", "",
            f"bleak checkout: {options.bleak} ({subprocess.run(['git', '-C', options.bleak, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip() or 'not a git work tree'}); "
            f"bleak {version}; "
            f"outputs in {logs}", "",
            "| example | args | target | plain story | fleet story | same? |", "|---|---|---|---|---|---|"]
    skipped = ["", "Not run: " + "; ".join(f"`{k}` ({v})" for k, v in SKIPPED.items()), ""]
    text = "\n".join(head + rows + skipped) + "\n"
    with open(options.out, "a") as out:
        out.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
