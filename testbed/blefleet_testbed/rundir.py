"""The run directory of one testbed: where its sockets, logs and recorded PIDs live.

Everything a testbed creates is inside its run directory, so several testbeds in
different run directories never see each other. Processes are only ever signalled by
their recorded PID *and* start time (so a recycled PID is never hit)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PIDS_FILE = "pids.json"
CONTROL_SOCKET = "control.sock"
BUS_SOCKET = "system_bus_socket"
MGMT_SOCKET = "mgmt.sock"  # real lane: the VM kernel's Bluetooth management interface
BUS_CONFIG = "bus.conf"
CREATED_MARK = ".created-by-testbed"
STATE_FILES = (PIDS_FILE, CONTROL_SOCKET, BUS_SOCKET, MGMT_SOCKET, BUS_CONFIG, "controller.log",
               "dbus-daemon.log", "bluezoo.log", "bridge.log", "pids.json.tmp")
PRIVATE_VM_DIR = "vm"  # a --real testbed's own VM, when it boots one
MAX_SOCKET_PATH = 107


class TestbedError(Exception):
    """A failure reported to the user as one clear sentence."""


@dataclass(frozen=True)
class RunDir:
    path: Path

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def bus_address(self) -> str:
        return f"unix:path={self.file(BUS_SOCKET)}"

    def check_socket_paths(self) -> None:
        for name in (BUS_SOCKET, CONTROL_SOCKET, MGMT_SOCKET):
            if len(str(self.file(name)).encode()) > MAX_SOCKET_PATH:
                raise TestbedError(
                    f"run directory {self.path} is too long for a Unix socket path; use a shorter --run-dir")

    def read_pids(self) -> list[dict]:
        try:
            return json.loads(self.file(PIDS_FILE).read_text())["processes"]
        except FileNotFoundError:
            raise TestbedError(f"no testbed is running in {self.path}") from None
        except (ValueError, KeyError):
            raise TestbedError(f"the testbed state in {self.path} is unreadable") from None

    def write_pids(self, processes: list[dict]) -> None:
        tmp = self.file("pids.json.tmp")
        tmp.write_text(json.dumps({"processes": processes}))
        os.replace(tmp, self.file(PIDS_FILE))

    def remove_state(self) -> None:
        """Removes every file the testbed created, and the directory if it created it."""
        created = self.file(CREATED_MARK).exists()
        shutil.rmtree(self.file(PRIVATE_VM_DIR), ignore_errors=True)
        for name in STATE_FILES + (CREATED_MARK,):
            try:
                self.file(name).unlink()
            except FileNotFoundError:
                pass
        if created:
            try:
                self.path.rmdir()
            except OSError:
                pass


def process_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None if it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def record(role: str, pid: int) -> dict:
    return {"role": role, "pid": pid, "start_time": process_start_time(pid)}


def is_alive(entry: dict) -> bool:
    start = process_start_time(entry["pid"])
    return start is not None and start == entry["start_time"]


def signal_recorded(entry: dict, sig: int) -> None:
    if is_alive(entry):
        try:
            os.kill(entry["pid"], sig)
        except ProcessLookupError:
            pass


def wait_gone(entries: list[dict], timeout: float) -> list[dict]:
    """Waits until every recorded process is gone; returns those still alive at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [e for e in entries if is_alive(e)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.02)


def terminate_recorded(entries: list[dict], grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds, exactly the recorded processes."""
    for e in entries:
        signal_recorded(e, signal.SIGTERM)
    for e in wait_gone(entries, grace):
        signal_recorded(e, signal.SIGKILL)
    wait_gone(entries, 2.0)
