"""Helpers of blefleet-web's end-to-end tests (conftest.py has the fixtures): the stack of a
BlueZoo testbed, blefleetd on it and blefleet-web on its socket, from the debug build
(`swift build` makes .build/debug/blefleetd, blefleet-web, blectl)."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "testbed" / "tests"))

from support import HUMIDITY_PROFILE, LANES, Testbed  # noqa: E402,F401  (LANES: for conftest)

BIN = ROOT / ".build" / "debug"
CHROMIUM = "/usr/bin/chromium"
BOARDS = 6


# A board name is the user's: the page must show it as text.
HOSTILE_ALIAS = '<img src=x onerror="window.__injected=1">lab & <b>co</b>'

# Log files whose tails go into the report of a failing test.
LOGS: dict[str, Path] = {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, timeout: float, what: str, interval: float = 0.05):
    """Polls `condition` until it returns something truthy; fails with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} (waited {timeout} s)")
        time.sleep(interval)


def http_get(port: int, path: str, headers: dict | None = None, timeout: float = 10) -> tuple[int, dict, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        connection.close()


def answers(port: int) -> bool:
    try:
        http_get(port, "/metrics", timeout=2)
        return True
    except OSError:
        return False


class Process:
    """A binary of ours in its own session, its stderr (and stdout) in a log file."""

    def __init__(self, name: str, argv: list[str], log: Path):
        self.name = name
        self.argv = argv
        self.log = log
        LOGS[name] = log
        with open(log, "ab") as out:
            out.write(f"--- {' '.join(argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def check_alive(self) -> bool:
        if not self.alive():
            raise AssertionError(f"{self.name} exited ({self.popen.returncode}); log:\n{self.log.read_text()[-4000:]}")
        return True

    def stop(self, timeout: float = 15) -> int | None:
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode


class Stack:
    """A testbed, blefleetd on it and blefleet-web on blefleetd's socket."""

    def __init__(self, work: Path, boards: int):
        self.work = work
        self.boards = boards
        self.socket = str(work / "d.sock")
        self.testbed = Testbed(work / "tb", ["--boards", str(boards), "--humidity", "--owner-pid", str(os.getpid())])
        profiles = work / "profiles"
        profiles.mkdir()
        (profiles / "nano-humidity.yaml").write_text(HUMIDITY_PROFILE)
        self.config = work / "blefleetd.conf"
        # nogroup (nobody's) is the read-only group: blefleet-web gives nobody what the socket does.
        self.config.write_text(f"socket-group: root\nread-only-group: nogroup\nprofile-dir: {profiles}\n")
        self.daemon: Process | None = None
        self.web: Process | None = None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"

    def start_daemon(self) -> None:
        self.daemon = Process(
            "blefleetd",
            [str(BIN / "blefleetd"), "--config", str(self.config), "--socket", self.socket,
             "--state-dir", str(self.work / "state"), "--bus", self.testbed.bus_address, "--log-target", "stderr"],
            self.work / "blefleetd.log")

        def accepts():
            self.daemon.check_alive()
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(self.socket)
                    return True
                except OSError:
                    return False
        wait_until(accepts, 30, f"blefleetd does not accept connections on {self.socket}")

    def stop_daemon(self) -> None:
        status = self.daemon.stop()
        assert status == 0, f"blefleetd exited {status} on SIGTERM"

    def start_web(self) -> None:
        self.web = Process(
            "blefleet-web",
            [str(BIN / "blefleet-web"), "--socket", self.socket, "--listen", f"127.0.0.1:{self.port}",
             "--log-target", "stderr"],
            self.work / "blefleet-web.log")
        wait_until(lambda: self.web.check_alive() and answers(self.port), 30,
                   f"blefleet-web does not answer HTTP on port {self.port}")

    def blectl(self, *args: str) -> str:
        result = subprocess.run([str(BIN / "blectl"), "--socket", self.socket, *args],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, f"blectl {' '.join(args)}: {result.returncode} {result.stderr}"
        return result.stdout

    def stop(self) -> None:
        for process in (self.web, self.daemon):
            if process:
                process.stop()
        self.testbed.stop()




@contextmanager
def another_web(socket_path: str, log: Path, *options: str, listen: str = "127.0.0.1"):
    """Another blefleet-web on the daemon's socket, on a port of its own, with `options`:
    yields its port once it answers HTTP (any status), and stops it at the end."""
    port = free_port()
    with open(log, "wb") as out:
        web = subprocess.Popen(
            [str(BIN / "blefleet-web"), "--socket", socket_path, "--listen", f"{listen}:{port}", *options,
             "--log-target", "stderr"], stdout=out, stderr=subprocess.STDOUT)
    try:
        def up():
            assert web.poll() is None, f"blefleet-web {' '.join(options)} exited {web.returncode}: {log.read_text()}"
            try:
                http_get(port, "/metrics", timeout=2)
                return True
            except OSError:
                return False
        wait_until(up, 30, f"blefleet-web {' '.join(options)} does not answer")
        yield port
    finally:
        web.terminate()
        try:
            web.wait(10)
        except subprocess.TimeoutExpired:
            web.kill()
            web.wait()


def basic(user: str, password: str) -> dict:
    """HTTP basic authentication's header."""
    import base64
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
