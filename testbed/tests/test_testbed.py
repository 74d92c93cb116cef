"""scripts/testbed itself: start/state/stop contract, process hygiene, board controls."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from dbus_fast import Variant
from support import (CENTRAL, LED_SERVICE, LED_STATUS, SCRIPT, TEMPERATURE, BluezError, Client, device_path,
                     run, run_cli)

ROLES = {"bluezoo": {"controller", "dbus-daemon", "bluezoo"}, "real": {"controller", "bridge"}}


def alive(entry: dict) -> bool:
    try:
        stat = Path(f"/proc/{entry['pid']}/stat").read_text()
    except FileNotFoundError:
        return False
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0] not in ("Z", "X") and int(fields[19]) == entry["start_time"]


def wait_all_gone(entries: list[dict], timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    while any(alive(e) for e in entries) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [e for e in entries if alive(e)]


def test_start_prints_eval_able_exports_and_default_state(make_testbed, lane):
    tb = make_testbed()
    # The real lane also bridges the VM kernel's Bluetooth management interface; BlueZoo
    # has no kernel behind it.
    mgmt = {"bluezoo": set(), "real": {"BLEFLEET_MGMT_SOCKET"}}[lane]
    assert set(tb.exports) == {"DBUS_SYSTEM_BUS_ADDRESS", "BLEFLEET_TESTBED_RUN_DIR"} | mgmt
    # eval "$(scripts/testbed start)" is what a person types: the lines must be shell.
    shell = subprocess.run(["sh", "-c", "\n".join(f"export {k}={v}" for k, v in tb.exports.items())
                            + '\necho "$DBUS_SYSTEM_BUS_ADDRESS|$BLEFLEET_TESTBED_RUN_DIR|$BLEFLEET_MGMT_SOCKET"'],
                           capture_output=True, text=True, check=True,
                           env={k: v for k, v in os.environ.items() if k != "BLEFLEET_MGMT_SOCKET"})
    expected_mgmt = str(tb.run_dir / "mgmt.sock") if mgmt else ""
    assert shell.stdout.strip() == f"{tb.bus_address}|{tb.run_dir}|{expected_mgmt}"
    if mgmt:
        assert stat.S_ISSOCK(os.stat(expected_mgmt).st_mode)

    state = tb.state()
    central = {"bluezoo": "00:1A:7D:DA:71:13", "real": state["central"]["address"]}[lane]
    assert state["central"] == {"name": "hci0", "address": central, "powered": True, "plugged": False}
    assert state["centrals"] == [state["central"]]
    boards = state["boards"]
    assert [b["name"] for b in boards] == ["nano-01", "nano-02", "nano-03", "nano-04", "nano-05"]
    assert len({b["address"] for b in boards}) == 5
    for b in boards:
        assert b == {"name": b["name"], "address": b["address"], "present": True, "led": None,
                     "led_writes": 0, "temperature": 21, "notifying": False}


def test_state_found_through_environment_variable(make_testbed):
    tb = make_testbed("--boards", "1")
    env = dict(os.environ, BLEFLEET_TESTBED_RUN_DIR=str(tb.run_dir))
    out = subprocess.run([str(SCRIPT), "state"], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["boards"][0]["name"] == "nano-01"


def test_start_without_run_dir_picks_a_fresh_one():
    out = run_cli("start", "--boards", "1").stdout
    exports = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines())
    run_dir = shlex.split(exports["BLEFLEET_TESTBED_RUN_DIR"])[0]
    try:
        assert Path(run_dir).is_dir()
        entries = json.loads((Path(run_dir) / "pids.json").read_text())["processes"]
    finally:
        run_cli("stop", "--run-dir", run_dir)
    assert wait_all_gone(entries, 5) == []
    assert not Path(run_dir).exists()


def test_stop_ends_exactly_the_recorded_processes(make_testbed, lane):
    tb = make_testbed("--boards", "2")
    entries = tb.pids()
    assert {e["role"] for e in entries} == ROLES[lane]
    assert all(alive(e) for e in entries)
    tb.stop()
    assert wait_all_gone(entries, 1) == []
    assert not (tb.run_dir / "pids.json").exists()
    assert not (tb.run_dir / "system_bus_socket").exists()
    assert not (tb.run_dir / "mgmt.sock").exists()
    again = run_cli("stop", "--run-dir", str(tb.run_dir), check=False)
    assert again.returncode != 0 and "no testbed is running" in again.stderr


def test_owner_exit_tears_the_testbed_down():
    owner = subprocess.Popen(["sleep", "60"])
    run_dir = Path(tempfile.mkdtemp(prefix="bftb-", dir="/tmp"))
    try:
        run_cli("start", "--boards", "1", "--run-dir", str(run_dir), "--owner-pid", str(owner.pid))
        entries = json.loads((run_dir / "pids.json").read_text())["processes"]
        owner.kill()
        owner.wait()
        assert wait_all_gone(entries, 10) == []
        assert not (run_dir / "pids.json").exists()
    finally:
        owner.kill()
        run_cli("stop", "--run-dir", str(run_dir), check=False)
        subprocess.run(["rm", "-rf", str(run_dir)])


def test_bad_input_is_one_clear_sentence(make_testbed, tmp_path):
    tb = make_testbed("--boards", "2")
    cases = [
        (["board", "drop", "nano-09"], "no board named 'nano-09'"),
        (["board", "temp", "nano-01", "300"], "outside"),
        (["board", "temp", "nano-01", "warm"], "not a whole number"),
        (["board", "reset", "bogus"], "no board named"),
    ]
    for args, text in cases:
        result = tb.cli(*args, check=False)
        assert result.returncode != 0, args
        assert text in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stdout == ""
    empty = run_cli("state", "--run-dir", str(tmp_path), check=False)
    assert empty.returncode != 0 and "no testbed is running" in empty.stderr
    for bad in (["start", "--boards", "0"], ["start", "--temperature", "lukewarm"],
                ["start", "--latency-ms", "-3"]):
        result = run_cli(*bad, "--run-dir", str(tmp_path), check=False)
        assert result.returncode != 0 and result.stderr.startswith("testbed: "), bad
        assert not (tmp_path / "pids.json").exists()


def test_side_by_side_testbeds_do_not_interfere(make_testbed):
    a = make_testbed("--boards", "2")
    b = make_testbed("--boards", "2")
    assert a.bus_address != b.bus_address
    a.cli("board", "drop", "nano-01")
    a.cli("board", "temp", "nano-02", "-7")
    assert [x["present"] for x in a.state()["boards"]] == [False, True]
    assert [x["present"] for x in b.state()["boards"]] == [True, True]
    assert b.board("nano-02")["temperature"] == 21
    a.stop()
    assert b.state()["boards"][0]["present"] is True


def test_temperature_is_one_signed_byte_and_led_writes_are_counted(make_testbed, lane):
    tb = make_testbed("--boards", "2")
    NANO1 = tb.address("nano-01")
    tb.cli("board", "temp", "all", "-5")

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover([NANO1])
            assert await c.connect_device(NANO1)
            chrc = (await c.gatt(NANO1))[TEMPERATURE]
            raw = await c.call(chrc, "org.bluez.GattCharacteristic1", "ReadValue", "a{sv}", [{}])
            assert bytes(raw[0]) == b"\xfb"
            await c.write_led(NANO1, b"\x01")
            await c.write_led(NANO1, b"\x00")
            with pytest.raises(BluezError) as err:
                await c.write_led(NANO1, b"\x01\x01")
            # The board says InvalidValueLength; over the air that is ATT error 0x0d, which
            # the central's bluetoothd reports as InvalidArguments ("Invalid Length").
            assert err.value.name == "org.bluez.Error.InvalidArguments"
            led = (await c.gatt(NANO1))[LED_STATUS]
            flags = await c.get(led, "org.bluez.GattCharacteristic1", "Flags")
            assert flags == ["write"]
            with pytest.raises(BluezError):
                await c.call(led, "org.bluez.GattCharacteristic1", "ReadValue", "a{sv}", [{}])
        finally:
            c.close()
    run(scenario())
    board = tb.board("nano-01")
    assert (board["led"], board["led_writes"], board["temperature"]) == (0, 2, -5)


def test_notifications_at_every_refresh_and_notifying_in_state(make_testbed, lane):
    tb = make_testbed("--boards", "1", "--notify-interval", "0.2", "--temperature", "ramp:-3:3")
    NANO1 = tb.address("nano-01")

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover([NANO1])
            assert await c.connect_device(NANO1)
            chrc = (await c.gatt(NANO1))[TEMPERATURE]
            await c.call(chrc, "org.bluez.GattCharacteristic1", "StartNotify")
            assert tb.board("nano-01")["notifying"] is True

            def values():
                return [int.from_bytes(bytes(m.body[1]["Value"].value), "little", signed=True)
                        for m in c.signals if m.member == "PropertiesChanged" and m.path == chrc
                        and "Value" in m.body[1]]

            async def four():
                return len(values()) >= 4
            assert await c.wait_until(four, 5)
            got = values()
            assert all(-3 <= v <= 3 for v in got)
            assert all(abs(x - y) == 1 for x, y in zip(got, got[1:]))   # a ramp, 1 °C per tick
            await c.call(device_path(NANO1), "org.bluez.Device1", "Disconnect")
        finally:
            c.close()
    run(scenario())
    # Disconnection ends the subscription on the board.
    assert tb.board("nano-01")["notifying"] is False


def test_reset_disconnects_and_turns_the_led_off(make_testbed, lane):
    tb = make_testbed("--boards", "1")
    NANO1 = tb.address("nano-01")

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover([NANO1])
            assert await c.connect_device(NANO1)
            await c.write_led(NANO1, b"\x01")
            assert tb.board("nano-01")["led"] == 1
            tb.cli("board", "reset", "nano-01")

            async def down():
                return not await c.get(device_path(NANO1), "org.bluez.Device1", "Connected")
            assert await c.wait_until(down, 5)
            assert tb.board("nano-01")["led"] is None
            assert await c.connect_device(NANO1)   # it is back, advertising
        finally:
            c.close()
    run(scenario())


def test_adapter_off_drops_links_and_on_brings_discovery_back(make_testbed, lane):
    tb = make_testbed("--boards", "2")
    NANO1, NANO2 = tb.address("nano-01"), tb.address("nano-02")

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover([NANO1, NANO2])
            assert await c.connect_device(NANO1)
            tb.cli("adapter", "off")
            assert tb.state()["central"]["powered"] is False

            async def down():
                return device_path(NANO1) not in await c.devices() or not await c.get(
                    device_path(NANO1), "org.bluez.Device1", "Connected")
            assert await c.wait_until(down, 5)
            with pytest.raises(BluezError) as err:
                await c.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")
            assert err.value.name == "org.bluez.Error.NotReady"
            tb.cli("adapter", "on")
            assert tb.state()["central"]["powered"] is True
            assert await c.discover([NANO1, NANO2])
            assert await c.connect_device(NANO2)
        finally:
            c.close()
    run(scenario())


def test_bluez_restart_makes_org_bluez_vanish_and_return(make_testbed, lane):
    tb = make_testbed("--boards", "2")
    NANO1, NANO2 = tb.address("nano-01"), tb.address("nano-02")
    before = next((e for e in tb.pids() if e["role"] == "bluezoo"), None)

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover([NANO1])
            await asyncio.get_running_loop().run_in_executor(None, tb.cli, "bluez", "restart")
            owner_changes = [m.body for m in c.signals if m.member == "NameOwnerChanged"]
            assert any(b[0] == "org.bluez" and b[2] == "" for b in owner_changes)   # vanished
            assert any(b[0] == "org.bluez" and b[2] != "" for b in owner_changes)   # returned
            assert await c.discover([NANO1, NANO2])
            assert await c.connect_device(NANO2)
        finally:
            c.close()
    run(scenario())
    if lane == "bluezoo":
        after = next(e for e in tb.pids() if e["role"] == "bluezoo")
        assert after["pid"] != before["pid"] and not alive(before)


def test_added_latency_slows_radio_operations(make_testbed, lane):
    tb = make_testbed("--boards", "1", "--latency-ms", "150")
    NANO1 = tb.address("nano-01")

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover([NANO1])
            assert await c.connect_device(NANO1)
            loop = asyncio.get_running_loop()
            start = loop.time()
            await c.read_temperature(NANO1)
            return loop.time() - start
        finally:
            c.close()
    assert run(scenario()) >= 0.14


@pytest.mark.parametrize("pattern,expected", [
    ("21", [21, 21, 21]), ("constant:-40", [-40, -40, -40]), ("distinct", [20, 21, 22]),
    ("distinct:-1", [-1, 0, 1]),
])
def test_temperature_patterns_at_start(make_testbed, pattern, expected):
    tb = make_testbed("--boards", "3", "--temperature", pattern)
    assert [b["temperature"] for b in tb.state()["boards"]] == expected


@pytest.mark.parametrize("keeps_advertising", [False, True])
def test_a_connected_board_stops_advertising_unless_told_otherwise(make_testbed, keeps_advertising):
    """A BLE controller leaves the advertising state when a central connects (the Nano
    sketch advertises again after the disconnect): a connected board gets no RSSI updates,
    while unconnected ones do. `--advertise-while-connected` models peripherals that go on."""
    extra = ["--advertise-while-connected"] if keeps_advertising else []
    tb = make_testbed("--boards", "2", "--scan-interval", "0.2", *extra)
    NANO1, NANO2 = tb.address("nano-01"), tb.address("nano-02")

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover([NANO1, NANO2])
            assert await c.connect_device(NANO1)
            await c.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")
            c.signals.clear()
            await asyncio.sleep(1.5)

            def rssi_updates(address):
                return sum(1 for m in c.signals if m.member == "PropertiesChanged"
                           and m.path == device_path(address) and "RSSI" in m.body[1])
            assert rssi_updates(NANO2) >= 3
            if keeps_advertising:
                assert rssi_updates(NANO1) >= 3
            else:
                assert rssi_updates(NANO1) == 0
            # After the disconnect it advertises again.
            await c.call(device_path(NANO1), "org.bluez.Device1", "Disconnect")
            c.signals.clear()
            await asyncio.sleep(1.0)
            assert rssi_updates(NANO1) >= 2
        finally:
            c.close()
    run(scenario())


def test_several_centrals_a_plugged_dongle_and_signal_heard_per_adapter(make_testbed, lane):
    """`--centrals 2`: BlueZ shows two central adapters; `board signal … --adapter hci1` is the
    RSSI hci1's scan reports for that board while hci0 still hears the default; `adapter plug`
    makes a third adapter appear in BlueZ and `adapter unplug` makes it vanish."""
    tb = make_testbed("--boards", "2", "--centrals", "2")
    state = tb.state()
    centrals = state["centrals"]
    assert [c["name"] for c in centrals] == ["hci0", "hci1"]
    assert all(c["powered"] and not c["plugged"] for c in centrals)
    assert len({c["address"] for c in centrals}) == 2
    nano1 = tb.address("nano-01")
    tb.cli("board", "signal", "nano-01", "-35", "--adapter", "hci1")
    tb.cli("board", "signal", "nano-01", "-80", "--adapter", "hci0")

    async def adapters(client) -> dict[str, dict]:
        return {p: ifs["org.bluez.Adapter1"] for p, ifs in (await client.objects()).items()
                if "org.bluez.Adapter1" in ifs}

    async def heard(client, adapter: str) -> int | None:
        path = f"{adapter}/dev_{nano1.replace(':', '_')}"
        await client.call(adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", "a{sv}",
                          [{"UUIDs": Variant("as", [LED_SERVICE]), "Transport": Variant("s", "le")}])
        await client.call(adapter, "org.bluez.Adapter1", "StartDiscovery")
        try:
            async def rssi():
                return (await client.objects()).get(path, {}).get("org.bluez.Device1", {}).get("RSSI")
            return await client.wait_until(rssi, tb.scale(10))
        finally:
            await client.call(adapter, "org.bluez.Adapter1", "StopDiscovery")

    async def check():
        client = await Client.connect(tb.bus_address)
        try:
            shown = await adapters(client)
            for central in centrals:
                adapter = shown.get(f"/org/bluez/{central['name']}")
                assert adapter is not None, f"BlueZ does not show {central['name']}: {sorted(shown)}"
                assert adapter["Address"] == central["address"]
                assert "central" in adapter["Roles"]
            assert await heard(client, "/org/bluez/hci1") == -35
            assert await heard(client, "/org/bluez/hci0") == -80

            name = tb.cli("adapter", "plug").stdout.strip()
            assert name.startswith("hci") and name not in ("hci0", "hci1")
            plugged = [c for c in tb.state()["centrals"] if c["plugged"]]
            assert [c["name"] for c in plugged] == [name]

            async def present():
                return f"/org/bluez/{name}" in await adapters(client)
            assert await client.wait_until(present, tb.scale(10)), f"{name} never appeared in BlueZ"
            tb.cli("adapter", "unplug")

            async def gone():
                return f"/org/bluez/{name}" not in await adapters(client)
            assert await client.wait_until(gone, tb.scale(10)), f"{name} stayed in BlueZ after unplug"
            assert [c["name"] for c in tb.state()["centrals"]] == ["hci0", "hci1"]
        finally:
            client.close()
    run(check())


def test_a_crash_in_the_boards_gatt_server_is_named_by_its_site():
    """bluetoothd's crashes in the real lane name where they happened when gdb can name the
    frames: the boards' GATT server answering on the ATT channel of a link that had ended
    (bluez/bluez#2447) is the testbed's board side, not the gateway's. The frames are those
    of a core from the drop schedule (bluetoothd 5.66, its build with symbols)."""
    from blefleet_testbed.lanes import crash_site
    boards_side = (
        "#0  encode_pdu (length=<optimized out>) at src/shared/att.c:401 / "
        "#1  create_att_send_op (att=0x180000001a) at src/shared/att.c:407 / "
        "#3  bt_att_chan_send_error_rsp.isra.0 (chan=<optimized out>) at src/shared/att.c:1884 / "
        "#4  write_complete_cb (attr=0x56308dd2cb20, err=-110) at src/shared/gatt-server.c:789 / "
        "#6  write_timeout (user_data=0x56308dd7e3d0) at src/shared/gatt-db.c:2085")
    assert "bluez/bluez#2447" in crash_site(boards_side)
    # Another site, or frames gdb could not name, are not guessed at.
    assert crash_site("#0  device_remove (device=0x5630) at src/device.c:7012 / "
                      "#1  adapter_remove_device at src/adapter.c:1410") is None
    assert crash_site("#0  0x0000563070cbf5a4 in ?? () / #1  0x0000563070cde402 in ?? ()") is None
