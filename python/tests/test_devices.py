"""Any device through blefleetd (devices.*, device.*), on a BlueZoo testbed whose boards the
fleet does not all own: nano-01 and nano-02 join the fleet (its `allow` list), the others are
devices like any a lab has. Spoken as raw JSON-RPC lines, as a client nobody here wrote would;
the testbed's boards and BlueZ's own objects (busctl) are the referees."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon
from support import LANES

LED_SERVICE = "cd48409a-f3cc-11ed-a05b-0242ac120003"
LED = "cd48409b-f3cc-11ed-a05b-0242ac120003"
TEMPERATURE = "d888a9c3-f3cc-11ed-a05b-0242ac120003"


class Line:
    """One connection to the daemon: calls answered by id, notifications kept in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.notes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self.read())

    @classmethod
    async def open(cls, path: str) -> "Line":
        reader, writer = await asyncio.open_unix_connection(path, limit=1 << 24)
        return cls(reader, writer)

    async def read(self) -> None:
        while line := await self.reader.readline():
            message = json.loads(line)
            if "id" in message and message["id"] in self.waiting:
                self.waiting.pop(message["id"]).set_result(message)
            else:
                await self.notes.put(message)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[number] = future
        self.writer.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}).encode() + b"\n")
        return await asyncio.wait_for(future, 60)

    async def result(self, method: str, **params: Any) -> Any:
        reply = await self.call(method, **params)
        assert "result" in reply, f"{method}: {reply}"
        return reply["result"]

    async def note(self, method: str, timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message = await asyncio.wait_for(self.notes.get(), max(0.01, deadline - time.monotonic()))
            if message.get("method") == method:
                return message["params"]

    def pending(self, method: str) -> list[dict[str, Any]]:
        found = []
        while not self.notes.empty():
            message = self.notes.get_nowait()
            if message.get("method") == method:
                found.append(message["params"])
        return found

    async def close(self) -> None:
        self.writer.close()
        self.task.cancel()


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


def links(daemon: Daemon) -> set[str]:
    """The addresses BlueZ shows a link to (Connected), read with busctl: the referee."""
    out = subprocess.run(
        ["busctl", f"--address={daemon.testbed.bus_address}", "--json=short", "call", "org.bluez", "/",
         "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"], capture_output=True, text=True, check=True)
    objects = json.loads(out.stdout)["data"][0]
    return {props["org.bluez.Device1"]["Address"]["data"] for props in objects.values()
            if "org.bluez.Device1" in props and props["org.bluez.Device1"]["Connected"]["data"]}


def wait_for(what: str, check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.1)


def handles(services: list[dict[str, Any]]) -> dict[str, int]:
    return {c["uuid"]: c["handle"] for s in services for c in s["characteristics"]}


def test_advertisements_come_from_the_daemons_discovery_with_every_device_and_the_filter_holds(lab):
    async def scenario():
        everyone = await Line.open(lab.socket)
        none = await Line.open(lab.socket)
        try:
            assert await everyone.result("devices.watch") == {"watching": True}
            # Devices known when the watch starts are reported before its reply.
            assert await none.result("devices.watch", services=["0000feed-0000-1000-8000-00805f9b34fb"]) == {"watching": True}
            filtered_out = none.pending("device.advertisement")
            seen: dict[str, dict[str, Any]] = {}
            deadline = time.monotonic() + 20
            # The boards that advertise: the fleet's own, linked, do not (as a Nano 33 BLE does
            # not while connected), so a scan hears them only when their link is down.
            while not {"nano-03", "nano-04", "nano-05"} <= seen.keys() and time.monotonic() < deadline:
                ad = await everyone.note("device.advertisement")
                seen[ad["name"] or ad["address"]] = ad
            assert await everyone.result("devices.unwatch") == {"watching": False}
            return seen, filtered_out
        finally:
            await everyone.close()
            await none.close()
    seen, filtered_out = run(scenario())
    assert filtered_out == []
    names = [f"nano-{i:02d}" for i in range(1, lab.boards + 1)]
    assert {"nano-03", "nano-04", "nano-05"} <= seen.keys() <= set(names), seen.keys()
    stranger = seen["nano-04"]
    assert stranger["address"] == lab.testbed.address("nano-04")
    assert LED_SERVICE in stranger["serviceUuids"]
    assert stranger["adapter"] == "hci0"
    assert isinstance(stranger["manufacturerData"], dict) and isinstance(stranger["serviceData"], dict)


def known_devices(daemon: Daemon) -> dict[str, str]:
    """Every device BlueZ remembers, address -> object path (busctl, the referee)."""
    out = subprocess.run(
        ["busctl", f"--address={daemon.testbed.bus_address}", "--json=short", "call", "org.bluez", "/",
         "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"], capture_output=True, text=True, check=True)
    objects = json.loads(out.stdout)["data"][0]
    return {props["org.bluez.Device1"]["Address"]["data"]: path for path, props in objects.items()
            if "org.bluez.Device1" in props}


def test_a_watch_reports_what_it_hears_not_what_bluez_remembers_and_removals(lab):
    """A scan session is told of the devices heard, not of every device BlueZ remembers: a board
    that powered off more than 10 s ago is still one of BlueZ's devices, yet a new watch does
    not report it (the others, heard all along, it does). When BlueZ drops a device the watch
    reported, device.removed says so."""
    silent, dropped = "nano-05", "nano-04"
    lab.testbed.cli("board", "drop", silent)
    went_silent = time.monotonic()

    async def scenario() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        first = await Line.open(lab.socket)
        second = await Line.open(lab.socket)
        try:
            assert await first.result("devices.watch") == {"watching": True}
            while (await first.note("device.advertisement"))["address"] != lab.testbed.address(dropped):
                pass
            # BlueZ forgets the device (as `bluetoothctl remove` makes it): the watch is told.
            path = known_devices(lab)[lab.testbed.address(dropped)]
            subprocess.run(["busctl", f"--address={lab.testbed.bus_address}", "call", "org.bluez",
                            path.rsplit("/", 1)[0], "org.bluez.Adapter1", "RemoveDevice", "o", path], check=True)
            removed = await first.note("device.removed")
            # Longer than the daemon's 10 s of "recently heard" since the board went silent.
            await asyncio.sleep(max(0.0, went_silent + 11 - time.monotonic()))
            assert lab.testbed.address(silent) in known_devices(lab), "BlueZ no longer remembers the silent board"
            assert await second.result("devices.watch") == {"watching": True}
            # What it was told first (each device at most once), then a board heard again: its
            # second report comes from an advertisement after the first burst, behind it in order.
            told: list[dict[str, Any]] = []
            while sum(ad["address"] == lab.testbed.address("nano-03") for ad in told) < 2:
                told.append(await second.note("device.advertisement"))
            return told, removed
        finally:
            await first.close()
            await second.close()
    try:
        replayed, removed = run(scenario())
    finally:
        lab.testbed.cli("board", "restore", silent)
    assert removed["address"] == lab.testbed.address(dropped) and removed["adapter"] == "hci0", removed
    reported = {ad["address"] for ad in replayed}
    assert lab.testbed.address(silent) not in reported, replayed
    # Boards that advertise were heard within the 10 s (the fleet's own, linked, do not
    # advertise, as a Nano 33 BLE does not while connected).
    for name in ("nano-03", "nano-04"):
        assert lab.testbed.address(name) in reported, (name, replayed)


def test_a_device_the_fleet_does_not_own_is_connected_leased_and_used_by_handle(lab):
    address = lab.testbed.address("nano-03")
    lab.testbed.cli("board", "temp", "nano-03", "17")

    async def scenario():
        line = await Line.open(lab.socket)
        try:
            link = await line.result("device.connect", address=address, timeoutMs=20000)
            by_uuid = handles(link["services"])
            temperature = await line.result("device.read", address=address, handle=by_uuid[TEMPERATURE])
            await line.result("device.write", address=address, handle=by_uuid[LED], value="01")
            refused = await line.call("device.read", address=address, handle=by_uuid[LED])
            missing = await line.call("device.read", address=address, handle=0xfff0)
            assert await line.result("device.notify", address=address, handle=by_uuid[TEMPERATURE]) == {"notifying": True}
            lab.testbed.cli("board", "temp", "nano-03", "19")
            # bluetoothd tells a read's value as a change of `Value` a moment after the read's
            # reply (its property signals wait for its main loop to idle): on a busy machine
            # that signal comes after the subscription, and reaches it as the value it read.
            value = await line.note("device.value")
            stale = []
            while value["value"] != "13" and len(stale) < 3:
                stale.append(value)
                value = await line.note("device.value")
            assert all(note["value"] == "11" for note in stale), stale
            services = await line.result("device.services", address=address)
            released = await line.result("device.disconnect", address=address)
            return link, temperature, refused, missing, value, services, released
        finally:
            await line.close()
    link, temperature, refused, missing, value, services, released = run(scenario())
    assert link["address"] == address and link["name"] == "nano-03" and link["adapter"] == "hci0"
    assert link["mtu"] >= 23
    assert LED_SERVICE in [s["uuid"] for s in link["services"]]
    led = next(c for s in link["services"] for c in s["characteristics"] if c["uuid"] == LED)
    temp = next(c for s in link["services"] for c in s["characteristics"] if c["uuid"] == TEMPERATURE)
    assert "write" in led["properties"] and "notify" in temp["properties"] and "read" in temp["properties"]
    assert services["services"] == link["services"]
    assert temperature == {"value": "11"}  # 17 °C
    assert lab.testbed.board("nano-03")["led"] == 1
    assert refused["error"]["code"] == -32007, refused
    assert refused["error"]["data"]["attError"] == 2, refused  # read not permitted
    assert missing["error"]["code"] == -32008, missing
    assert value["address"] == address and value["handle"] == temp["handle"] and value["value"] == "13"  # 19 °C
    assert released == {"address": address, "leased": False}
    wait_for("nano-03's link released", lambda: address not in links(lab))
    # The fleet's own boards never noticed.
    assert {b["name"] for b in lab.testbed.state()["boards"] if b["name"] in ("nano-01", "nano-02")} == {"nano-01", "nano-02"}


def test_clients_hold_what_they_may_and_the_fleet_keeps_its_slot(lab):
    """The greedy client of issue 50: with every slot a client may take leased, a command on
    every board is still answered for each (the adapter keeps a slot for the fleet), the next
    device waits for a slot and says "connection slot", a user past its bound is refused at
    once, and a client that leaves while its connect waits has it cancelled at once."""
    a1, a3, a4, a5 = (lab.testbed.address(f"nano-0{i}") for i in (1, 3, 4, 5))

    async def scenario():
        first, second, third, fourth = [await Line.open(lab.socket) for _ in range(4)]
        try:
            # Three slots, one kept for the fleet: the fleet's idle boards give way to two leases.
            await first.result("device.connect", address=a3)
            await second.result("device.connect", address=a4)
            # The fleet's boards rotate through the slot kept for them; a leased one is not taken.
            led = await first.call("led.set", select="all", on=True, timeoutMs=10000)
            full = await third.call("device.connect", address=a5, timeoutMs=3000)
            # A third device for the same user waits for a slot; a fourth is past its bound.
            # (Each ask counts while it is asked: one of the fourth's may be under way when the
            # third's comes, which is then the one refused; it asks again.)
            waiting, bounded = None, {}
            for _ in range(100):
                if waiting is None or waiting.done():
                    waiting = asyncio.ensure_future(third.call("device.connect", address=a5, timeoutMs=60000))
                    await asyncio.sleep(0.05)
                bounded = await fourth.call("device.connect", address=a1, timeoutMs=1)
                if bounded.get("error", {}).get("code") == -32012 and not waiting.done():
                    break
            # The waiting client leaves: its connect ends at once, and with it its place.
            await third.close()
            left = time.monotonic()
            after = bounded
            while after.get("error", {}).get("code") == -32012 and time.monotonic() - left < 5:
                after = await fourth.call("device.connect", address=a1, timeoutMs=1)
            freed_after = time.monotonic() - left
            waiting.cancel()
            lost = first.pending("device.disconnected") + second.pending("device.disconnected")
            return led, full, bounded, after, freed_after, lost, links(lab)
        finally:
            for line in (first, second, third, fourth):
                await line.close()
    led, full, bounded, after, freed_after, lost, linked = run(scenario())
    assert lost == []
    assert {a3, a4} <= linked and a5 not in linked
    assert led["result"]["totals"] == {"ok": 2, "failed": 0}, led
    assert full["error"]["code"] == -32003, full
    assert "connection slot" in full["error"]["message"] and "reserved-fleet-slots" in full["error"]["message"], full
    assert bounded["error"]["code"] == -32012, bounded
    assert "leases-per-user" in bounded["error"]["message"], bounded
    assert after.get("error", {}).get("code") != -32012 and freed_after < 1.0, (after, freed_after)
    # The clients' sockets closed: their leases ended, their links went, the fleet's boards came back.
    wait_for("the clients' links released", lambda: not ({a3, a4, a5} & links(lab)))


def test_a_script_killed_while_it_holds_a_link_leaves_none_and_the_next_run_works(lab):
    address = lab.testbed.address("nano-05")
    script = f"""
import asyncio, json, sys
async def main():
    reader, writer = await asyncio.open_unix_connection({lab.socket!r})
    writer.write(json.dumps({{"jsonrpc": "2.0", "id": 1, "method": "device.connect",
                             "params": {{"address": {address!r}}}}}).encode() + b"\\n")
    await writer.drain()
    print("asked", flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""
    child = subprocess.Popen(["python3", "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "asked"
    wait_for("the script's link to nano-05 up", lambda: address in links(lab), timeout=30)
    child.kill()
    child.wait()
    wait_for("no link to nano-05 once its client is gone", lambda: address not in links(lab), timeout=30)

    async def again():
        line = await Line.open(lab.socket)
        try:
            return await line.result("device.connect", address=address)
        finally:
            await line.close()
    assert run(again())["address"] == address
    wait_for("nano-05's link released after the second run", lambda: address not in links(lab), timeout=30)


@pytest.fixture(scope="module")
def shared_lab():
    """A lab whose daemon has a read-only group (nogroup) beside its control group (root):
    its socket is open to every local account, and each call is judged by the caller's."""
    if "bluezoo" not in LANES:
        pytest.skip("runs on the BlueZoo lane")
    work = Path(tempfile.mkdtemp(prefix="bfrole-", dir="/tmp"))
    work.chmod(0o755)
    made = None
    try:
        made = Daemon(work, boards=3, fleet=1, config="read-only-group: nogroup\nallow: [nano-01]\n")
        yield made
    finally:
        if made:
            made.stop()
        shutil.rmtree(work, ignore_errors=True)


def as_user(uid: int, gid: int, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """argv run by uid/gid with no other groups (the daemon learns who from the socket)."""
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv],
                          capture_output=True, text=True, timeout=90, env=env, cwd="/")


ROOT = Path(__file__).resolve().parents[2]
# The interpreter the venv was made from (/usr/bin/python3.11): another user may run it
# wherever the checkout and its venv live, a 0700 home included.
BASE_PYTHON = os.path.realpath(sys.executable)


def readable_packages(work: Path) -> str:
    """A copy of what a script run as another user imports (blefleet, and bleak with what it
    needs on Linux) in `work`, which that user can read: the checkout and its venv may sit
    in a folder only root can enter. The value for PYTHONPATH."""
    site = work / "site"
    if not site.exists():
        shutil.copytree(ROOT / "python" / "blefleet", site / "blefleet",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("bleak", "dbus_fast", "typing_extensions"):
            spec = importlib.util.find_spec(name)
            assert spec is not None and spec.origin is not None, f"{name} is not installed"
            origin = Path(spec.origin)
            if origin.name == "__init__.py":
                shutil.copytree(origin.parent, site / origin.parent.name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(origin, site / origin.name)
        for path in [site, *site.rglob("*")]:
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    return str(site)


def test_the_read_only_group_scans_and_reads_the_control_group_connects_and_writes_strangers_get_nothing(shared_lab):
    lab = shared_lab
    address = lab.testbed.address("nano-02")
    env = dict(os.environ, BLEFLEET_SOCKET=lab.socket, PYTHONPATH=readable_packages(Path(lab.work)))
    scan = ("import asyncio\nfrom bleak import BleakScanner\n"
            "for d in asyncio.run(BleakScanner.discover(timeout=2.0)):\n    print(d.address)\n")
    connect = ("import asyncio, sys\nfrom bleak import BleakClient\nfrom bleak.exc import BleakError\n"
               "async def main():\n"
               "    try:\n"
               "        async with BleakClient(sys.argv[1], timeout=5.0):\n"
               "            print('connected')\n"
               "    except BleakError as e:\n"
               "        print('refused:', e)\n"
               "asyncio.run(main())\n")
    def launch(uid: int, gid: int, code: str, *args: str) -> subprocess.CompletedProcess[str]:
        return as_user(uid, gid, BASE_PYTHON, "-m", "blefleet.bleak", write_script(lab, code), *args, env=env)

    nobody = (65534, 65534)
    stranger = (4242, 4242)
    # The read-only group scans, and its scripts' connects are refused with the group to join.
    scanned = launch(*nobody, scan)
    assert scanned.returncode == 0 and address in scanned.stdout, scanned.stderr
    refused = launch(*nobody, connect, address)
    assert "refused:" in refused.stdout and "device.connect" in refused.stdout, (refused.stdout, refused.stderr)
    # A stranger gets nothing, not even a scan.
    stranger_scan = launch(*stranger, scan)
    assert stranger_scan.returncode != 0 and address not in stranger_scan.stdout, stranger_scan.stdout
    # The daemon refuses a peer with no role as it connects, and says why.
    assert "uid 4242 may not use blefleetd" in stranger_scan.stderr, stranger_scan.stderr

    async def scenario():
        holder = await Line.open(lab.socket)  # root: the control group
        try:
            link = await holder.result("device.connect", address=address)
            temperature = handles(link["services"])[TEMPERATURE]
            led = handles(link["services"])[LED]
            # The read-only group reads and follows a link someone else holds, and writes nothing.
            reader = subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BASE_PYTHON, "-I", "-c", RAW_CLIENT,
                 lab.socket, json.dumps([["device.read", {"address": address, "handle": temperature}],
                                         ["device.notify", {"address": address, "handle": temperature}],
                                         ["device.write", {"address": address, "handle": led, "value": "01"}]])],
                capture_output=True, text=True, timeout=60, cwd="/")
            return [json.loads(line) for line in reader.stdout.splitlines()], reader.stderr
        finally:
            await holder.close()
    answers, errors = run(scenario())
    assert "result" in answers[0] and len(answers[0]["result"]["value"]) == 2, (answers, errors)
    assert answers[1].get("result") == {"notifying": True}, answers
    assert answers[2]["error"]["code"] == -32000, answers
    assert lab.testbed.board("nano-02")["led"] is None


RAW_CLIENT = """
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
for number, (method, params) in enumerate(json.loads(sys.argv[2]), 1):
    f.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}) + "\\n")
    f.flush()
    while True:
        message = json.loads(f.readline())
        if message.get("id") == number:
            print(json.dumps(message), flush=True)
            break
"""


def write_script(lab: Daemon, code: str) -> str:
    path = Path(lab.work) / f"script-{abs(hash(code))}.py"
    path.write_text(code)
    path.chmod(0o644)
    return str(path)
