"""Unchanged bleak scripts through blefleetd (python3 -m blefleet.bleak), against the daemon on a
BlueZoo lab: the scripts are ordinary bleak code (the shapes of bleak's own examples:
discover, explore the services and read every readable characteristic, notifications, two
devices at once, the disconnect callback) and import nothing of blefleet. The testbed's boards
are the referee."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import bleak.exc
import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPERATURE = "d888a9c3-f3cc-11ed-a05b-0242ac120003"
LED = "cd48409b-f3cc-11ed-a05b-0242ac120003"
LED_SERVICE = "cd48409a-f3cc-11ed-a05b-0242ac120003"


def launch(lab, tmp_path: Path, script: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ, BLEFLEET_SOCKET=lab.socket, PYTHONPATH=str(ROOT / "python"))
    # Nothing of BlueZ's bus: a script that went around the daemon would fail.
    env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent"
    result = subprocess.run([sys.executable, "-m", "blefleet.bleak", str(path), *args], env=env, capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_discover_lists_every_device_heard_with_its_advertisement(lab, tmp_path):
    out = launch(lab, tmp_path, """
        import asyncio
        from bleak import BleakScanner

        async def main():
            found = await BleakScanner.discover(timeout=3.0, return_adv=True)
            for device, adv in found.values():
                print(device.address, adv.local_name, adv.rssi, ",".join(adv.service_uuids))

        asyncio.run(main())
    """).stdout
    lines = {line.split()[0]: line.split() for line in out.splitlines()}
    # Every board that advertises: the fleet's own do not while linked (as a Nano 33 BLE does
    # not while connected), and a scan on BlueZ does not hear them then either.
    for i in range(1 + lab.fleet, lab.boards + 1):
        address = lab.testbed.address(f"nano-{i:02d}")
        assert address in lines, out
        assert lines[address][1] == f"nano-{i:02d}"
        assert "cd48409a-f3cc-11ed-a05b-0242ac120003" in lines[address][3]


def test_a_scanner_filter_and_find_device_by_name(lab, tmp_path):
    out = launch(lab, tmp_path, """
        import asyncio, sys
        from bleak import BleakScanner

        async def main():
            device = await BleakScanner.find_device_by_name(sys.argv[1], timeout=5.0)
            print("found", device.address if device else None)
            nobody = await BleakScanner.discover(timeout=1.0, service_uuids=["0000feed-0000-1000-8000-00805f9b34fb"])
            print("filtered", len(nobody))

        asyncio.run(main())
    """, "nano-04").stdout
    assert f"found {lab.testbed.address('nano-04')}" in out
    assert "filtered 0" in out


def test_exploring_a_device_reads_every_readable_characteristic_and_writes_the_led(lab, tmp_path):
    lab.testbed.cli("board", "temp", "nano-03", "23")
    out = launch(lab, tmp_path, """
        import asyncio, sys
        from bleak import BleakClient

        async def main():
            async with BleakClient(sys.argv[1]) as client:
                print("mtu", client.mtu_size)
                for service in client.services:
                    for char in service.characteristics:
                        if "read" in char.properties:
                            print("read", char.uuid, char.handle, (await client.read_gatt_char(char)).hex())
                        else:
                            print("char", char.uuid, char.handle, ",".join(char.properties))
                await client.write_gatt_char(sys.argv[2], b"\\x01", response=True)
                print("written")

        asyncio.run(main())
    """, lab.testbed.address("nano-03"), LED).stdout
    assert f"read {TEMPERATURE}" in out and " 17\n" in out, out  # 23 °C
    assert f"char {LED}" in out and "written" in out, out
    assert lab.testbed.board("nano-03")["led"] == 1


def test_notifications_and_two_devices_at_once(lab, tmp_path):
    a3, a5 = lab.testbed.address("nano-03"), lab.testbed.address("nano-05")
    lab.testbed.cli("board", "temp", "nano-03", "11")
    lab.testbed.cli("board", "temp", "nano-05", "12")
    out = launch(lab, tmp_path, """
        import asyncio, sys
        from bleak import BleakClient

        async def follow(address, uuid, count):
            seen = asyncio.Queue()
            async with BleakClient(address) as client:
                await client.start_notify(uuid, lambda char, data: seen.put_nowait(bytes(data)))
                values = [await asyncio.wait_for(seen.get(), 10) for _ in range(count)]
                await client.stop_notify(uuid)
            print(address, [v.hex() for v in values])

        async def main():
            await asyncio.gather(follow(sys.argv[1], sys.argv[3], 2), follow(sys.argv[2], sys.argv[3], 2))

        asyncio.run(main())
    """, a3, a5, TEMPERATURE).stdout
    assert f"{a3} ['0b', '0b']" in out, out
    assert f"{a5} ['0c', '0c']" in out, out


def test_the_disconnect_callback_is_called_when_the_device_goes(lab, tmp_path):
    address = lab.testbed.address("nano-04")
    try:
        out = launch(lab, tmp_path, """
            import asyncio, subprocess, sys
            from bleak import BleakClient

            async def main():
                gone = asyncio.Event()
                client = BleakClient(sys.argv[1], disconnected_callback=lambda c: gone.set())
                await client.connect()
                print("connected", client.is_connected, flush=True)
                subprocess.run(sys.argv[2:], check=True)  # the board loses power
                await asyncio.wait_for(gone.wait(), 30)
                print("callback; connected", client.is_connected)

            asyncio.run(main())
        """, address, str(ROOT / "scripts" / "testbed"), "board", "drop", "nano-04", "--run-dir", str(lab.testbed.run_dir)).stdout
    finally:
        lab.testbed.cli("board", "restore", "nano-04")
    assert "connected True" in out and "callback; connected False" in out, out


def test_errors_are_bleaks_own(lab, tmp_path):
    out = launch(lab, tmp_path, """
        import asyncio, sys
        from bleak import BleakClient
        from bleak.exc import BleakDeviceNotFoundError, BleakError

        async def main():
            try:
                async with BleakClient("F0:0D:00:00:00:99", timeout=2.0):
                    pass
            except BleakDeviceNotFoundError as e:
                print("not found:", type(e).__name__)
            async with BleakClient(sys.argv[1]) as client:
                try:
                    await client.read_gatt_char(sys.argv[2])
                except BleakError as e:
                    print("refused:", type(e).__name__, getattr(e, "code", None), e)

        asyncio.run(main())
    """, lab.testbed.address("nano-03"), LED).stdout
    assert "not found: BleakDeviceNotFoundError" in out, out
    # bleak >= 3.0 has its own exception for an ATT error; before it the backend's says it.
    protocol = "BleakGATTProtocolError" if hasattr(bleak.exc, "BleakGATTProtocolError") else "BleakFleetGATTError"
    assert f"refused: {protocol} 2" in out, out


def test_notifications_on_a_characteristic_the_fleet_follows(lab, tmp_path):
    """bleak's examples/async_callback_with_queue.py, as a lab runs it on one of the fleet's
    own boards (nano-01): the fleet already follows its temperature, and BlueZ keeps one
    subscription per D-Bus client (it answers the daemon's second StartNotify with success,
    or InProgress while its subscription waits for the device). The script's start_notify
    joins the fleet's subscription, gets its values and stops; the fleet goes on following."""
    address = lab.testbed.address("nano-01")
    lab.testbed.cli("board", "temp", "nano-01", "21")
    out = launch(lab, tmp_path, """
        import asyncio, sys
        from bleak import BleakClient

        async def main():
            queue = asyncio.Queue()
            async with BleakClient(sys.argv[1]) as client:
                await client.start_notify(sys.argv[2], lambda char, data: queue.put_nowait(bytes(data)))
                values = [await asyncio.wait_for(queue.get(), 10) for _ in range(3)]
                await client.stop_notify(sys.argv[2])
            print("values", [v.hex() for v in values])

        asyncio.run(main())
    """, address, TEMPERATURE).stdout
    assert "values ['15', '15', '15']" in out, out  # 21 °C
    # The script's subscription ended; the fleet's did not: it hears the board's next value.
    lab.testbed.cli("board", "temp", "nano-01", "22")

    def fleet_reads_22() -> bool:
        boards = json.loads(subprocess.run([str(ROOT / ".build" / "debug" / "blectl"), "--socket", lab.socket, "--json",
                                            "boards"], capture_output=True, text=True, timeout=30).stdout)["boards"]
        reading = next(b for b in boards if b["address"] == address).get("temperature") or {}
        return reading.get("celsius") == 22
    deadline = time.monotonic() + 30
    while not fleet_reads_22():
        assert time.monotonic() < deadline, "the fleet stopped following nano-01 after the script's stop_notify"
        time.sleep(0.2)


@pytest.mark.skipif(not hasattr(__import__("bleak"), "BleakAdapter"), reason="bleak < 3.1 has no BleakAdapter")
def test_bleak_adapter_lists_the_connected_devices_and_a_client_joins_one(lab, tmp_path):
    """bleak 3.1's BleakAdapter.get_connected_devices: the devices linked now (the fleet's boards
    among them), filtered by service as on BlueZ; a BLEDevice of that list connects."""
    fleet = {lab.testbed.address("nano-01"), lab.testbed.address("nano-02")}

    def linked() -> bool:
        boards = json.loads(subprocess.run([str(ROOT / ".build" / "debug" / "blectl"), "--socket", lab.socket, "--json",
                                            "boards"], capture_output=True, text=True, timeout=30).stdout)["boards"]
        return all(b["state"] == "ready" for b in boards if b["address"] in fleet)
    # The fleet links its boards again after an earlier test leased them.
    deadline = time.monotonic() + 60
    while not linked():
        assert time.monotonic() < deadline, "the fleet's boards are not linked"
        time.sleep(0.2)
    out = launch(lab, tmp_path, """
        import asyncio, sys
        from bleak import BleakAdapter, BleakClient

        async def main():
            adapter = await BleakAdapter.get()
            connected = await adapter.get_connected_devices(service_uuids=[sys.argv[1]])
            print("connected", " ".join(sorted(d.address for d in connected)))
            print("none", len(await adapter.get_connected_devices(["0000feed-0000-1000-8000-00805f9b34fb"])))
            elsewhere = await BleakAdapter.get(bluez={"adapter": "hci9"})
            print("hci9", len(await elsewhere.get_connected_devices(service_uuids=[sys.argv[1]])))
            board = next(d for d in connected if d.address == sys.argv[3])
            async with BleakClient(board) as client:
                print("joined", client.is_connected, len((await client.read_gatt_char(sys.argv[2]))))

        asyncio.run(main())
    """, "cd48409a-f3cc-11ed-a05b-0242ac120003", TEMPERATURE, lab.testbed.address("nano-01")).stdout
    listed = set(out.split("connected ", 1)[1].splitlines()[0].split())
    assert fleet <= listed, out
    assert "none 0" in out and "hci9 0" in out and "joined True" in out, out


@pytest.mark.skipif(importlib.util.find_spec("bleak_retry_connector") is None,
                    reason="bleak-retry-connector needs bleak >= 3.0")
def test_establish_connection_in_four_scripts_takes_turns_on_two_slots(lab, tmp_path):
    """bleak-retry-connector's establish_connection, unchanged, in four scripts at once, each to
    a device of its own, on an adapter that lends clients two slots (the lab: three, one kept
    for the fleet) to a user who may hold three: every script connects in turn, twice, and
    reads; none is told its device is "not found" for a full house, and nothing of the retry
    library goes to BlueZ around the daemon."""
    script = tmp_path / "retry.py"
    script.write_text(textwrap.dedent("""
        import asyncio, logging, sys
        from bleak import BleakClient, BleakScanner
        from bleak_retry_connector import establish_connection

        async def main(address, characteristic):
            device = await BleakScanner.find_device_by_address(address, timeout=20)
            assert device is not None, f"{address} not heard"
            for cycle in range(2):
                client = await establish_connection(BleakClient, device, address)
                try:
                    print("read", cycle, len(await client.read_gatt_char(characteristic)), flush=True)
                    await asyncio.sleep(1.5)  # the script's work: the slot stays taken meanwhile
                finally:
                    await client.disconnect()

        logging.basicConfig(level=logging.DEBUG, format="%(name)s %(message)s")
        asyncio.run(main(sys.argv[1], sys.argv[2]))
    """))
    env = dict(os.environ, BLEFLEET_SOCKET=lab.socket, PYTHONPATH=str(ROOT / "python"))
    env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent"
    names = ("nano-02", "nano-03", "nano-04", "nano-05")
    scripts = [subprocess.Popen([sys.executable, "-m", "blefleet.bleak", str(script), lab.testbed.address(name), TEMPERATURE],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in names]
    outcomes = []
    for name, process in zip(names, scripts):
        out, err = process.communicate(timeout=240)
        outcomes.append((name, process.returncode, out, err))
    for name, code, out, err in outcomes:
        assert code == 0, (name, err[-3000:])
        assert "read 0" in out and "read 1" in out, (name, out)
        assert "not found" not in err.lower(), (name, err[-3000:])
        assert "dbus" not in err.lower() or "blefleetd owns the adapters" in err, (name, err[-3000:])


def test_use_cached_is_the_value_bluez_holds_not_a_read(lab, tmp_path):
    """read_gatt_char(use_cached=True) answers with the value BlueZ holds (the last notified),
    as bleak's BlueZ backend does, without asking the device: after the board's temperature
    changed, a cached read still says the old one, a plain read the new."""
    lab.testbed.cli("board", "temp", "nano-04", "14")
    out = launch(lab, tmp_path, """
        import asyncio, subprocess, sys
        from bleak import BleakClient

        async def main(address, uuid, testbed, run_dir):
            seen = asyncio.Queue()
            async with BleakClient(address) as client:
                await client.start_notify(uuid, lambda char, data: seen.put_nowait(bytes(data)))
                print("notified", (await asyncio.wait_for(seen.get(), 10)).hex())
                await client.stop_notify(uuid)
                subprocess.run([testbed, "board", "temp", "nano-04", "33", "--run-dir", run_dir], check=True)
                print("cached", (await client.read_gatt_char(uuid, use_cached=True)).hex())
                print("read", (await client.read_gatt_char(uuid)).hex())

        asyncio.run(main(*sys.argv[1:]))
    """, lab.testbed.address("nano-04"), TEMPERATURE, str(ROOT / "scripts" / "testbed"), str(lab.testbed.run_dir)).stdout
    assert "notified 0e" in out and "cached 0e" in out and "read 21" in out, out


def test_a_fleet_board_the_fleet_holds_linked_is_found_as_on_bluez(lab, tmp_path):
    """bleak's examples find their device before they connect (find_device_by_address). A fleet
    board the fleet holds linked does not advertise (as a Nano 33 BLE does not while connected),
    yet a script through the fleet may use it (its lease joins the fleet's link), as on BlueZ
    without the fleet, where the board advertises and is found. So a scan finds it, also one
    started more than the daemon's 10 s of "recently heard" after the board was last heard
    (linked all along, it has not advertised since), with what it said when it was last heard:
    its RSSI and its advertised service, not the link's "no RSSI"."""
    address = lab.testbed.address("nano-02")

    def linked() -> bool:
        boards = json.loads(subprocess.run([str(ROOT / ".build" / "debug" / "blectl"), "--socket", lab.socket, "--json",
                                            "boards"], capture_output=True, text=True, timeout=30).stdout)["boards"]
        return next(b for b in boards if b["address"] == address)["state"] == "ready"
    # The fleet links it again after an earlier test leased it (the fleet's board comes back).
    deadline = time.monotonic() + 60
    while not linked():
        assert time.monotonic() < deadline, f"{address} is not linked by the fleet"
        time.sleep(0.2)
    # Waits out the daemon's window (DeviceProxy.recentlyHeard, 10 s): not heard since.
    time.sleep(11)
    assert linked()
    out = launch(lab, tmp_path, """
        import asyncio, sys
        from bleak import BleakClient, BleakScanner

        async def main():
            device = await BleakScanner.find_device_by_address(sys.argv[1], timeout=5.0)
            print("found", device.address if device else None, device.name if device else None)
            async with BleakClient(device) as client:
                print("read", len(await client.read_gatt_char(sys.argv[2])))
            found = await BleakScanner.discover(timeout=1.0, return_adv=True)
            print("discovered", sys.argv[1] in found)
            _, adv = found[sys.argv[1]]
            print("rssi", adv.rssi, "advertises", sys.argv[3] in adv.service_uuids)

        asyncio.run(main())
    """, address, TEMPERATURE, LED_SERVICE).stdout
    assert f"found {address} nano-02" in out, out
    assert "read 1" in out and "discovered True" in out, out
    rssi = int(out.split("rssi ")[1].split()[0])
    assert -127 < rssi < 0 and "advertises True" in out, out
