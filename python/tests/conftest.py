"""Fixtures of the Python package's tests: a BlueZoo testbed (humidity profile, 4 boards) and
blefleetd from the debug build on it; the testbed's state is the referee."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "testbed" / "tests"))
sys.path.insert(0, str(ROOT / "testbed"))

from support import HUMIDITY_PROFILE, LANES, Testbed, fail_on_unasked_crashes  # noqa: E402

BIN = ROOT / ".build" / "debug"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A real-lane test during which the VM's bluetoothd died unasked fails, naming the crash
    (issue 55; testbed/tests/support.py)."""
    vm = os.environ.get("BLEFLEET_TESTBED_VM")
    if "real" not in item.nodeid or not vm:
        return None
    return fail_on_unasked_crashes(item, nextitem, lambda: Path(vm))
BOARDS = 4


class Daemon:
    def __init__(self, work: Path, boards: int = BOARDS, config: str = "", fleet: int | None = None,
                 lane: str = "bluezoo", testbed_options: tuple[str, ...] = ()) -> None:
        """`boards` on the testbed; `config` added to blefleetd's; `fleet`: how many of the
        boards join the fleet (its `allow` list in `config` says which; default all); `lane`:
        BlueZoo, or real BlueZ in the VM of $BLEFLEET_TESTBED_VM; `testbed_options` more
        options of `scripts/testbed start` (`--encrypted`)."""
        self.work = work
        self.boards = boards
        self.fleet = boards if fleet is None else fleet
        self.lane = lane
        self.socket = str(work / "d.sock")
        options = ["--boards", str(boards), "--humidity", "--temperature", "distinct:-1", "--owner-pid", str(os.getpid()),
                   *testbed_options]
        environment = dict(os.environ)
        if lane == "real":
            options += ["--real", "--vm", os.environ["BLEFLEET_TESTBED_VM"]]
        self.testbed = Testbed(work / "tb", options, lane)
        if self.testbed.mgmt_socket:
            environment["BLEFLEET_MGMT_SOCKET"] = self.testbed.mgmt_socket
        profiles = work / "profiles"
        profiles.mkdir()
        (profiles / "nano-humidity.yaml").write_text(HUMIDITY_PROFILE)
        extra = config
        config_file = work / "blefleetd.conf"
        config_file.write_text(f"socket-group: root\nprofile-dir: {profiles}\n{extra}")
        self.log = work / "blefleetd.log"
        self._command = [str(BIN / "blefleetd"), "--config", str(config_file), "--socket", self.socket, "--state-dir",
                         str(work / "state"), "--bus", self.testbed.bus_address, "--log-target", "stderr"]
        self._environment = environment
        self.start()

    def start(self) -> None:
        """Starts blefleetd and waits until its fleet is ready."""
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(self._command, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self._environment)
        deadline = time.monotonic() + (180 if self.lane == "real" else 60)
        while not self.ready():
            assert self.process.poll() is None, f"blefleetd exited: {self.log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"blefleetd has not {self.fleet} boards ready: {self.log.read_text()[-3000:]}"
            time.sleep(0.1)

    def ready(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(self.socket)
        except OSError:
            return False
        out = subprocess.run([str(BIN / "blectl"), "--socket", self.socket, "--json", "boards"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            return False
        boards = json.loads(out.stdout)["boards"]
        return len(boards) == self.fleet and all(b["state"] == "ready" for b in boards)

    def stop_daemon(self) -> None:
        """Stops blefleetd (SIGTERM), the testbed staying up."""
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def stop(self) -> None:
        self.stop_daemon()
        self.testbed.stop()


@pytest.fixture(scope="module")
def daemon():
    if "bluezoo" not in LANES:
        pytest.skip("the Python package's tests run on the BlueZoo lane")
    work = Path(tempfile.mkdtemp(prefix="bfpy-", dir="/tmp"))
    made = None
    try:
        made = Daemon(work)
        yield made
    finally:
        if made:
            made.stop()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module", params=LANES)
def lab(request):
    """A lab whose fleet owns two of its five boards (its `allow` list): nano-03 to nano-05 are
    devices like any other a lab has. Three connection slots, one kept for the fleet (two lent
    to clients); a user holds at most three devices. On each lane of BLEFLEET_LANES (the real
    one needs $BLEFLEET_TESTBED_VM, a VM scripts/test boots)."""
    if request.param == "real" and not os.environ.get("BLEFLEET_TESTBED_VM"):
        pytest.fail("the real lane needs BLEFLEET_TESTBED_VM (scripts/testbed vm start)")
    work = Path(tempfile.mkdtemp(prefix="bfdev-", dir="/tmp"))
    made = None
    try:
        made = Daemon(work, boards=5, fleet=2, config="connection-limit: 3\nleases-per-user: 3\nallow: [nano-01, nano-02]\n",
                      lane=request.param)
        yield made
    finally:
        if made:
            made.stop()
        shutil.rmtree(work, ignore_errors=True)
