"""The real-BlueZ lane itself: the patched btvirt's links, and faults named in one line.

Runs only when the real lane is enabled (BLEFLEET_LANES); the faults that need a VM of
their own boot one each (about a minute)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from blefleet_testbed.rundir import is_alive
from support import LANES, TEMPERATURE, Client, run, run_cli

pytestmark = pytest.mark.skipif("real" not in LANES, reason="the real lane is not in BLEFLEET_LANES")


def test_boards_connected_at_once_exchange_data_on_their_own_links(make_testbed):
    """btvirt-multilink.patch defect 1: with 2+ links on the central, each board's ATT
    traffic must travel on its own link (stock btvirt handed the peripheral the central's
    connection handle)."""
    tb = make_testbed("--boards", "3", "--temperature", "distinct:-1", "--notify-interval", "0.3", lane="real")
    boards = {b["name"]: b["address"] for b in tb.state()["boards"]}

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover(list(boards.values()), timeout=tb.scale(10))
            for address in boards.values():
                assert await c.connect_device(address, timeout=tb.scale(10))
            # Every board connected at once; a different LED value to each.
            leds = {"nano-01": b"\x01", "nano-02": b"\x00", "nano-03": b"\x01"}
            await asyncio.gather(*(c.write_led(boards[n], v) for n, v in leds.items()))
            temps = await asyncio.gather(*(c.read_temperature(boards[n]) for n in sorted(boards)))
            # Notifications of each board arrive on that board's characteristic.
            paths = {n: (await c.gatt(a))[TEMPERATURE] for n, a in boards.items()}
            for path in paths.values():
                await c.call(path, "org.bluez.GattCharacteristic1", "StartNotify")
            c.signals.clear()

            async def every_board_notified():
                got = {}
                for m in c.signals:
                    if m.member == "PropertiesChanged" and "Value" in m.body[1]:
                        got[m.path] = int.from_bytes(bytes(m.body[1]["Value"].value), "little", signed=True)
                return got if len(got) == 3 else None
            notified = await c.wait_until(every_board_notified, tb.scale(5))
            return temps, {n: notified[p] for n, p in paths.items()}
        finally:
            c.close()
    temps, notified = run(scenario())
    assert temps == [-1, 0, 1]
    assert notified == {"nano-01": -1, "nano-02": 0, "nano-03": 1}
    state = {b["name"]: b for b in tb.state()["boards"]}
    assert {n: (b["led"], b["led_writes"]) for n, b in state.items()} == {
        "nano-01": (1, 1), "nano-02": (0, 1), "nano-03": (1, 1)}


def test_bluetoothd_that_died_is_named_in_one_line(make_testbed, real_vm_dir):
    tb = make_testbed("--boards", "1", lane="real")
    vm = json.loads((Path(real_vm_dir()) / "vm.json").read_text())
    with __import__("socket").create_connection(("127.0.0.1", vm["agent_port"]), timeout=30) as s:
        s.sendall(b"bluez-stop\n")
        assert s.recv(100).startswith(b"ok")
    result = tb.cli("board", "drop", "nano-01", check=False)
    assert result.returncode != 0
    assert "bluetoothd is not running in the VM" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    tb.cli("bluez", "restart")   # and the testbed recovers
    assert tb.state()["central"]["powered"] is True


def _start_private(env: dict, run_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(__file__).resolve().parents[2] / "scripts" / "testbed"), "start",
                           "--real", "--boards", "1", "--run-dir", str(run_dir)],
                          env=env, capture_output=True, text=True, timeout=600)


def _qemu_processes_of(path: Path) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in args and str(path) in args:
            found.append(f"{proc.name} {args[:80]}")
    return found


@pytest.mark.parametrize("fault,expected", [
    ("kernel", "the VM did not boot"),
    ("btvirt", "btvirt exited"),
])
def test_a_vm_that_cannot_come_up_is_named_in_one_line_and_leaves_nothing(fault, expected):
    run_dir = Path(tempfile.mkdtemp(prefix="bftb-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k != "BLEFLEET_TESTBED_VM"}
    if fault == "kernel":
        env["BLEFLEET_TESTBED_KERNEL"] = "/bin/true"   # not a kernel: qemu refuses it
    else:
        env["BLEFLEET_BTVIRT"] = "/bin/false"          # the controllers never come
    try:
        result = _start_private(env, run_dir)
        assert result.returncode != 0
        assert result.stdout == ""
        lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("testbed: starting")]
        assert lines and lines[0].startswith("testbed: ") and expected in lines[0], result.stderr
        assert not (run_dir / "pids.json").exists()
        assert _qemu_processes_of(run_dir) == []
    finally:
        run_cli("stop", "--run-dir", str(run_dir), check=False)
        subprocess.run(["rm", "-rf", str(run_dir)])


def test_a_private_vm_goes_with_its_testbed():
    """`start --real` without a shared VM boots its own; `stop` leaves no process."""
    run_dir = Path(tempfile.mkdtemp(prefix="bftb-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k != "BLEFLEET_TESTBED_VM"}
    try:
        result = _start_private(env, run_dir)
        assert result.returncode == 0, result.stderr
        assert json.loads(run_cli("state", "--run-dir", str(run_dir)).stdout)["boards"][0]["present"]
        keeper = json.loads((run_dir / "vm" / "pids.json").read_text())["processes"]
        assert _qemu_processes_of(run_dir)
    finally:
        run_cli("stop", "--run-dir", str(run_dir), check=False)
    assert _qemu_processes_of(run_dir) == []
    assert [e for e in keeper if is_alive(e)] == []
    assert not run_dir.exists() or not any(run_dir.iterdir())
    subprocess.run(["rm", "-rf", str(run_dir)])
