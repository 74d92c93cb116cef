"""Pairing through blefleetd (issue 51): unchanged bleak scripts, run through
``python3 -m blefleet.bleak``, pair a board that keeps a value for paired centrals only
(the testbed's ``--encrypted`` board, a characteristic with BlueZ's flag encrypt-read), read
it, find the bond still there after the daemon restarted, and unpair it. The scripts are
ordinary bleak code and import nothing of blefleet."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from conftest import BIN, Daemon
from support import LANES

ROOT = Path(__file__).resolve().parents[2]
SECRET = "d888a9c5-f3cc-11ed-a05b-0242ac120003"  # testbed/blefleet_testbed/profile.py SECRET_UUID
SECRET_VALUE = "paired-only"


@pytest.fixture(scope="module", params=[lane for lane in LANES if lane == "bluezoo"] or ["bluezoo"])
def lab(request):
    """Three boards: the fleet owns nano-01; nano-03 needs an encrypted link for its secret."""
    if "bluezoo" not in LANES:
        pytest.skip("pairing runs on the BlueZoo lane here (the real lane: test_real_lane)")
    work = Path(tempfile.mkdtemp(prefix="bfpair-", dir="/tmp"))
    made = None
    try:
        made = Daemon(work, boards=3, fleet=1, config="allow: [nano-01]\n", testbed_options=("--encrypted",))
        yield made
    finally:
        if made:
            made.stop()
        shutil.rmtree(work, ignore_errors=True)


def launch(lab: Daemon, tmp_path: Path, script: str, *args: str) -> str:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ, BLEFLEET_SOCKET=lab.socket, PYTHONPATH=str(ROOT / "python"))
    env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent"  # nothing of BlueZ's bus
    result = subprocess.run([sys.executable, "-m", "blefleet.bleak", str(path), *args], env=env, capture_output=True,
                            text=True, timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


# What a lab's script does: connect, read the secret (a refusal is printed as the exception's
# class and words), pair when asked, read again.
READ = """
    import asyncio, sys
    from bleak import BleakClient
    from bleak.exc import BleakError

    async def main(address, pair):
        async with BleakClient(address) as client:
            try:
                print("read", (await client.read_gatt_char(sys.argv[2])).decode())
            except BleakError as e:
                print("refused", type(e).__name__, e)
            if pair:
                await client.pair()
                print("read", (await client.read_gatt_char(sys.argv[2])).decode())

    asyncio.run(main(sys.argv[1], len(sys.argv) > 3))
"""

UNPAIR = """
    import asyncio, sys
    from bleak import BleakClient
    from bleak.exc import BleakDeviceNotFoundError

    async def main(address):
        await BleakClient(address).unpair()
        print("unpaired")
        try:
            await BleakClient(address).unpair()
        except BleakDeviceNotFoundError as e:
            print("not found", e)

    asyncio.run(main(sys.argv[1]))
"""


def refused(line: str) -> bool:
    """BlueZ's "Not paired" (NotPermitted) as bleak raises it: ATT's Insufficient
    Authentication (0x05) through the fleet with bleak >= 3.0."""
    return line.startswith("refused ") and ("Not paired" in line or "Insufficient Authentication" in line
                                            or "0x05" in line)


def test_a_script_pairs_reads_the_encrypted_value_keeps_the_bond_and_unpairs(lab, tmp_path):
    board = lab.testbed.address("nano-03")
    # Before pairing, BlueZ refuses the read (bleak's error); pair() and the read works.
    first = launch(lab, tmp_path, READ, board, SECRET, "pair").splitlines()
    assert refused(first[0]), first
    assert first[1] == f"read {SECRET_VALUE}", first
    # The bond is BlueZ's: after blefleetd restarts, a new script reads without pairing.
    lab.stop_daemon()
    lab.start()
    assert launch(lab, tmp_path, READ, board, SECRET).splitlines() == [f"read {SECRET_VALUE}"]
    # unpair() removes the device, bond and all (bleak's "not found" the second time) ...
    out = launch(lab, tmp_path, UNPAIR, board).splitlines()
    assert out[0] == "unpaired" and out[1].startswith("not found"), out
    # ... and the read is refused again until the script pairs again.
    again = launch(lab, tmp_path, READ, board, SECRET).splitlines()
    assert refused(again[0]), again


def boards(lab: Daemon) -> list[dict]:
    out = subprocess.run([str(BIN / "blectl"), "--socket", lab.socket, "--json", "boards"], capture_output=True,
                         text=True, timeout=30, check=True)
    return json.loads(out.stdout)["boards"]


def test_an_unpaired_fleet_board_comes_back_to_the_fleet(lab, tmp_path):
    board = lab.testbed.address("nano-01")
    out = launch(lab, tmp_path, UNPAIR, board).splitlines()
    assert out[0] == "unpaired", out
    # BlueZ forgot it, link and all; the fleet keeps the board and connects it once heard
    # again: then a command reaches it (a board the fleet still thought linked would fail).
    deadline = time.monotonic() + 60
    while True:
        state = {b["address"]: b["state"] for b in boards(lab)}
        if state.get(board) == "ready":
            led = subprocess.run([str(BIN / "blectl"), "--socket", lab.socket, "led", "on", "nano-01"],
                                 capture_output=True, text=True, timeout=60)
            if led.returncode == 0:
                break
        assert time.monotonic() < deadline, f"{board} did not come back to the fleet: {state}"
        time.sleep(0.2)


@pytest.fixture(scope="module", params=[lane for lane in LANES if lane == "real"])
def real_lab(request):
    """The same three boards on real BlueZ in the testbed's VM (its bluetoothd serves the boards'
    side too, with a NoInputNoOutput agent: a Nano pairs Just Works)."""
    if not os.environ.get("BLEFLEET_TESTBED_VM"):
        pytest.fail("the real lane needs BLEFLEET_TESTBED_VM (scripts/testbed vm start)")
    work = Path(tempfile.mkdtemp(prefix="bfpair-real-", dir="/tmp"))
    made = None
    try:
        made = Daemon(work, boards=3, fleet=1, config="allow: [nano-01]\n", testbed_options=("--encrypted",),
                      lane="real")
        yield made
    finally:
        if made:
            made.stop()
        shutil.rmtree(work, ignore_errors=True)


def bonded(lab: Daemon, address: str) -> bool:
    """Whether the VM's bluetoothd keeps a bond with `address` on a central (busctl, the referee)."""
    out = subprocess.run(
        ["busctl", f"--address={lab.testbed.bus_address}", "--json=short", "call", "org.bluez", "/",
         "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"], capture_output=True, text=True, check=True)
    for path, interfaces in json.loads(out.stdout)["data"][0].items():
        device = interfaces.get("org.bluez.Device1")
        if device and device["Address"]["data"] == address and device.get("Bonded", {}).get("data"):
            return True
    return False


PAIR_AND_READ = """
    import asyncio, sys
    from bleak import BleakClient

    async def main(address, secret):
        async with BleakClient(address, timeout=60) as client:
            await client.pair()
            print("read", (await client.read_gatt_char(secret)).decode())

    asyncio.run(main(*sys.argv[1:]))
"""


def test_real_bluez_pairs_a_board_reads_its_secret_and_the_bond_outlives_a_restart(real_lab, tmp_path):
    """On real BlueZ: an unchanged script pairs the board that needs an encrypted link and reads
    its secret; bluetoothd keeps the bond (Bonded), a new script after blefleetd restarted reads
    without pairing, and unpair() removes it."""
    board = real_lab.testbed.address("nano-03")
    assert launch(real_lab, tmp_path, PAIR_AND_READ, board, SECRET).splitlines() == [f"read {SECRET_VALUE}"]
    assert bonded(real_lab, board)
    real_lab.stop_daemon()
    real_lab.start()
    assert launch(real_lab, tmp_path, READ, board, SECRET).splitlines() == [f"read {SECRET_VALUE}"]
    out = launch(real_lab, tmp_path, UNPAIR, board).splitlines()
    assert out[0] == "unpaired" and out[1].startswith("not found"), out
    assert not bonded(real_lab, board)
