"""The bleak backend (blefleet.bleak) against a FAKE blefleetd that speaks the issue-37 contract
(devices.watch, device.connect/disconnect/read/write/notify and their notifications) for a few
made-up devices: it records what the backend sends and answers as the contract says. Tests of
the backend with the real daemon are elsewhere."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bleak import BleakClient, BleakScanner
from bleak.backends.characteristic import BleakGATTCharacteristic
from bleak.exc import BleakCharacteristicNotFoundError, BleakDBusError, BleakDeviceNotFoundError, BleakError

import bleak.exc
from blefleet.bleak import (BleakClientBlefleet, BleakFleetOutOfSlotsError, BleakScannerBlefleet, install, installed,
                            uninstall)

PYTHON_DIR = Path(__file__).resolve().parents[1]
# bleak >= 2.0 names the backend in use (backend_id); >= 1.1 has BleakClient.name.
HAS_BACKEND_ID = hasattr(BleakClient, "backend_id")

THERMO = "AA:BB:CC:DD:EE:01"   # advertises battery + environmental sensing, has the GATT table
PLAIN = "AA:BB:CC:DD:EE:02"    # advertises nothing but a name; its RSSI changes after the watch
UNHEARD = "AA:BB:CC:DD:EE:03"  # connect: -32001 not heard
SLOW = "AA:BB:CC:DD:EE:04"     # connect: -32003 timeout
CROWDED = "AA:BB:CC:DD:EE:05"  # connect: every connection slot is leased (-32004)
WAITED = "AA:BB:CC:DD:EE:06"   # connect: no connection slot came free in time (-32003)
QUEUED = "AA:BB:CC:DD:EE:07"   # connect: its turn in the adapter's queue did not come (-32003)
ABORTED = "AA:BB:CC:DD:EE:08"  # connect: le-connection-abort-by-local twice, then connected
POWERED_OFF = "AA:BB:CC:DD:EE:09"  # connect: the adapter is off (-32002)
NO_BLUEZ = "AA:BB:CC:DD:EE:0A"     # connect: BlueZ is not running (-32005)
LIMITED = "AA:BB:CC:DD:EE:0B"      # connect: the user holds leases-per-user devices (-32012)


def u16(short: int) -> str:
    return f"0000{short:04x}-0000-1000-8000-00805f9b34fb"


CUSTOM_SERVICE = "12345678-1234-5678-1234-56789abcdef0"
STORE = "12345678-1234-5678-1234-56789abcdef1"
SECRET = "12345678-1234-5678-1234-56789abcdef2"
SLUGGISH = "12345678-1234-5678-1234-56789abcdef3"

SERVICES: list[dict[str, Any]] = [
    {"uuid": u16(0x180F), "handle": 0x000A, "primary": True, "characteristics": [
        {"uuid": u16(0x2A19), "handle": 0x000B, "properties": ["read", "notify"],
         "descriptors": [{"uuid": u16(0x2902), "handle": 0x000D}, {"uuid": u16(0x2901), "handle": 0x000E}]}]},
    {"uuid": CUSTOM_SERVICE, "handle": 0x0010, "primary": True, "characteristics": [
        {"uuid": STORE, "handle": 0x0011, "properties": ["read", "write", "write-without-response"], "descriptors": []},
        {"uuid": SECRET, "handle": 0x0013, "properties": ["read", "write"], "descriptors": []},
        {"uuid": SLUGGISH, "handle": 0x0015, "properties": ["read"], "descriptors": []}]},
]

ADVERTISEMENTS: dict[str, dict[str, Any]] = {
    THERMO: {"address": THERMO, "addressType": "random", "name": "fake-thermo", "rssi": -50, "txPower": 4,
             "manufacturerData": {"89": "0102ff"}, "serviceData": {u16(0x181A): "0a0b"},
             "serviceUuids": [u16(0x180F), u16(0x181A)], "adapter": "hci0", "connected": False},
    PLAIN: {"address": PLAIN, "addressType": "public", "name": None, "rssi": -70, "txPower": None,
            "manufacturerData": {}, "serviceData": {}, "serviceUuids": [], "adapter": "hci1", "connected": False},
}


def _uuid128(text: str) -> str:
    text = text.lower()
    if len(text) == 4:
        return f"0000{text}-0000-1000-8000-00805f9b34fb"
    if len(text) == 8:
        return f"{text}-0000-1000-8000-00805f9b34fb"
    return text


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class NoReply(Exception):
    """The fake daemon answers nothing (the client closes the connection first)."""


class Peer:
    """One connection to the fake daemon."""

    def __init__(self, number: int, writer: asyncio.StreamWriter) -> None:
        self.number = number
        self.writer = writer
        self.leases: set[str] = set()
        self.notifying: set[tuple[str, int]] = set()
        self.watching = False
        self.watch: list[str] | None = None
        self.open = True

    def send(self, message: dict[str, Any]) -> None:
        if self.open:
            self.writer.write(json.dumps(message).encode() + b"\n")

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})


class FakeDaemon:
    """blefleetd as the contract describes it, in a thread of its own (so that a script run by the
    launcher in a subprocess reaches it too). ``requests`` is every (connection, method, params)
    received; ``events`` what happened to connections (``("closed", n)``)."""

    def __init__(self, path: str, burst_first: bool = False) -> None:
        self.path = path
        #: The first advertisements of a watch come before its reply (as blefleetd sends them),
        #: not after it (as the contract says).
        self.burst_first = burst_first
        self.aborts = 0  # connects of ABORTED answered so far
        self.requests: list[tuple[int, str, Any]] = []
        self.events: list[tuple[str, int]] = []
        self.values: dict[int, str] = {0x000B: "64", 0x000E: b"Battery".hex(), 0x0011: "00"}
        self.peers: list[Peer] = []
        self.paired: set[str] = set()  # what BlueZ holds a bond with
        self._numbers = iter(range(1, 1000))
        self._ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the fake daemon did not start"

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_unix_server(self._serve, self.path))
        self._ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        async def shut() -> None:
            self.server.close()
            for peer in self.peers:
                peer.open = False
                peer.writer.close()
        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def run(self, action: Callable[[], None]) -> None:
        """Runs ``action`` in the fake daemon's loop and waits for it."""
        async def call() -> None:
            action()
        asyncio.run_coroutine_threadsafe(call(), self.loop).result(10)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = Peer(next(self._numbers), writer)
        self.peers.append(peer)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                request = json.loads(line)
                assert request.get("jsonrpc") == "2.0", request
                method, params, ident = request["method"], request.get("params", {}), request.get("id")
                self.requests.append((peer.number, method, params))
                try:
                    result = self._answer(peer, method, params)
                    if method == "devices.watch" and self.burst_first:
                        self._burst(peer)
                    peer.send({"jsonrpc": "2.0", "id": ident, "result": result})
                    if method == "devices.watch" and not self.burst_first:
                        self._burst(peer)
                    self._after(peer, method, params)
                except NoReply:
                    pass
                except RpcError as e:
                    error: dict[str, Any] = {"code": e.code, "message": e.message}
                    if e.data is not None:
                        error["data"] = e.data
                    peer.send({"jsonrpc": "2.0", "id": ident, "error": error})
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            # The socket's end ends its leases, notifications and watch.
            peer.open = False
            self.events.append(("closed", peer.number))
            writer.close()

    # -- the contract --------------------------------------------------------------------

    def _leased(self, address: str) -> bool:
        return any(address in p.leases and p.open for p in self.peers)

    def _answer(self, peer: Peer, method: str, params: dict[str, Any]) -> Any:
        if method == "devices.watch":
            services = params.get("services")
            peer.watching = True
            peer.watch = None if services is None else [_uuid128(s) for s in services]
            return {"watching": True}
        if method == "devices.unwatch":
            peer.watching, peer.watch = False, None
            return {"watching": False}
        address = params.get("address")
        if method == "device.connect":
            assert isinstance(params.get("timeoutMs"), int), params
            if address == UNHEARD:
                raise RpcError(-32001, f"{address} is not heard by any adapter")
            if address == SLOW:
                raise RpcError(-32003, f"connecting to {address} timed out after {params['timeoutMs']} ms")
            if address == CROWDED:
                raise RpcError(-32004, "every connection slot is leased (3 of 3): disconnect a device first")
            # The daemon's own sentences (DeviceProxy.noSlot, BlueZ's reasons as it passes them).
            if address == WAITED:
                raise RpcError(-32003, f"No connection slot of hci0 became free for {address} in time: all 2 are in use "
                                       "(2 device links leased by clients).")
            if address == LIMITED:
                raise RpcError(-32012, "uid 1000 already holds 4 devices (leased or connecting), the most one user may "
                                       "(leases-per-user: 4): disconnect one first.")
            if address == QUEUED:
                raise RpcError(-32003, f"{address} was still waiting for its turn to connect through hci0 at its "
                                       "deadline (3 connects queued there).")
            if address == ABORTED:
                self.aborts += 1
                if self.aborts <= 2:
                    raise RpcError(-32603, f"{address} could not be connected through hci0: le-connection-abort-by-local.")
                address = THERMO
            if address == POWERED_OFF:
                raise RpcError(-32002, "Every adapter of the fleet is powered off (hci0); switch one on.")
            if address == NO_BLUEZ:
                raise RpcError(-32005, "BlueZ is not running (org.bluez is not on the system bus).")
            if address != THERMO:
                raise RpcError(-32001, f"{address} is not heard by any adapter")
            peer.leases.add(address)
            return {"address": address, "name": "fake-thermo", "adapter": "hci0", "mtu": 247, "services": SERVICES}
        if method == "device.disconnect":
            peer.leases.discard(address)
            return {"address": address, "connected": False}
        if method == "device.unpair":
            if address != THERMO:
                raise RpcError(-32001, f"BlueZ knows no device {address} on any adapter: there is no pairing to remove.")
            self.paired.discard(address)
            for other in self.peers:
                other.leases.discard(address)
            return {"address": address, "adapters": ["hci0"]}
        if not self._leased(address):
            raise RpcError(-32006, f"{address} is not connected")
        if method == "device.pair":
            assert isinstance(params.get("timeoutMs"), int), params
            if params.get("passkey") == 666:
                # The device drops the link in the middle of the pairing: the daemon says so
                # first, and the client closes its connection (the lease has no more use).
                peer.send({"jsonrpc": "2.0", "method": "device.disconnected",
                           "params": {"address": address, "reason": "the link went down"}})
                raise NoReply()
            if params.get("passkey") not in (None, 123456):
                raise RpcError(-32013, f"Pairing with {address} failed: {address} shows passkey 123456, not the "
                                       f"{params['passkey']:06d} given.")
            already = address in self.paired
            self.paired.add(address)
            return {"address": address, "adapter": "hci0", "paired": True, "bonded": True, "alreadyPaired": already}
        handle = params["handle"]
        if method == "device.read":
            if handle == 0x0013:
                raise RpcError(-32007, "the device answered ATT error 0x02 (read not permitted)", {"attError": 2})
            if handle == 0x0015:
                raise RpcError(-32003, f"reading handle {handle} of {address} timed out")
            if params.get("descriptor", False) != (handle in (0x000D, 0x000E)) or handle not in self.values:
                raise RpcError(-32008, f"{address} has no such handle {handle}")
            return {"value": self.values[handle]}
        if method == "device.write":
            if handle == 0x0013:
                raise RpcError(-32007, "the device answered ATT error 0x03 (write not permitted)", {"attError": 3})
            if handle not in self.values:
                raise RpcError(-32008, f"{address} has no such handle {handle}")
            self.values[handle] = params["value"]
            return {"written": True}
        if method == "device.notify":
            if handle != 0x000B:
                raise RpcError(-32008, f"{address} has no notifying handle {handle}")
            if params.get("on", True):
                peer.notifying.add((address, handle))
            else:
                peer.notifying.discard((address, handle))
            return {"notifying": bool(params.get("on", True))}
        raise RpcError(-32601, f"no method {method}")

    def _after(self, peer: Peer, method: str, params: dict[str, Any]) -> None:
        """What follows a reply: the current value of a notifying characteristic."""
        if method == "device.notify" and params.get("on", True):
            self.push_value(params["address"], params["handle"], self.values[params["handle"]])

    def _burst(self, peer: Peer) -> None:
        """A watch's first advertisements, one per device heard (and a change a moment later)."""
        for advertisement in ADVERTISEMENTS.values():
            self._advertise(peer, advertisement)
        changed = {**ADVERTISEMENTS[PLAIN], "rssi": -65, "name": "fake-plain"}
        self.loop.call_later(0.05, self._advertise, peer, changed)

    def _advertise(self, peer: Peer, advertisement: dict[str, Any]) -> None:
        if not peer.watching:
            return
        if peer.watch is not None and not set(peer.watch) & set(advertisement["serviceUuids"]):
            return
        peer.notify("device.advertisement", {**advertisement, "time": "2025-01-01T00:00:00Z"})

    # -- what a test makes happen --------------------------------------------------------

    def push_value(self, address: str, handle: int, value: str, to_all: bool = False) -> None:
        """A notification of the device: to the connections that asked for it (``to_all``: to
        every connection holding the device's lease, asked or not)."""
        for peer in self.peers:
            if (address, handle) in peer.notifying or (to_all and address in peer.leases):
                peer.notify("device.value", {"address": address, "handle": handle, "value": value,
                                             "time": "2025-01-01T00:00:00Z"})

    def drop_link(self, address: str) -> None:
        """The device's link goes down: ``device.disconnected`` to its lease holders."""
        for peer in self.peers:
            if address in peer.leases:
                peer.leases.discard(address)
                peer.notifying = {n for n in peer.notifying if n[0] != address}
                peer.notify("device.disconnected", {"address": address, "reason": "remote user terminated"})

    def hang_up(self) -> None:
        """Closes every connection (as a daemon that stops would)."""
        for peer in self.peers:
            peer.open = False
            peer.writer.close()

    def closed(self, number: int, seconds: float = 5) -> bool:
        """Whether connection ``number`` ends within ``seconds``."""
        deadline = time.monotonic() + seconds
        while ("closed", number) not in self.events:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def calls(self, method: str) -> list[tuple[int, Any]]:
        return [(n, p) for n, m, p in self.requests if m == method]


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Iterator[FakeDaemon]:
    # A short path: a Unix socket's path has room for about 100 bytes.
    work = Path(tempfile.mkdtemp(prefix="bfbk-", dir="/tmp"))
    daemon = FakeDaemon(str(work / "d.sock"), burst_first=getattr(request, "param", False))
    try:
        yield daemon
    finally:
        daemon.stop()
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 30))


async def until(condition: Callable[[], bool], seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition was not met in time"
        await asyncio.sleep(0.01)


# -- the scanner ---------------------------------------------------------------------------


# Both orders of a watch's first advertisements and its reply.
both_orders = pytest.mark.parametrize("fake", [False, True], indirect=True, ids=["burst-after-reply", "burst-first"])


@both_orders
def test_discover_gives_each_device_with_its_advertisement_data(fake: FakeDaemon) -> None:
    async def scenario() -> dict[str, Any]:
        return await BleakScanner.discover(0.3, return_adv=True, backend=BleakScannerBlefleet,
                                           socket_path=fake.path)
    found = run(scenario())
    assert sorted(found) == [THERMO, PLAIN]
    thermo, thermo_adv = found[THERMO]
    assert (thermo.address, thermo.name) == (THERMO, "fake-thermo")
    assert thermo_adv.local_name == "fake-thermo"
    assert thermo_adv.manufacturer_data == {89: b"\x01\x02\xff"}
    assert thermo_adv.service_data == {u16(0x181A): b"\x0a\x0b"}
    assert thermo_adv.service_uuids == [u16(0x180F), u16(0x181A)]
    assert (thermo_adv.tx_power, thermo_adv.rssi) == (4, -50)
    assert thermo_adv.platform_data[0] == THERMO and thermo_adv.platform_data[1]["adapter"] == "hci0"
    assert thermo.details["addressType"] == "random"
    plain, plain_adv = found[PLAIN]
    # The change the daemon sent after the first advertisement is the one kept.
    assert (plain.name, plain_adv.rssi, plain_adv.tx_power) == ("fake-plain", -65, None)
    assert plain_adv.manufacturer_data == {} and plain_adv.service_uuids == []
    # One connection: watch (no filter), then unwatch, then closed.
    assert [(m, p) for _, m, p in fake.requests] == [("devices.watch", {}), ("devices.unwatch", {})]
    assert fake.closed(fake.requests[0][0])


@both_orders
def test_a_service_filter_is_the_daemons_and_bleaks(fake: FakeDaemon) -> None:
    detected: list[tuple[str, int]] = []

    async def scenario() -> list[str]:
        scanner = BleakScanner(lambda d, ad: detected.append((d.address, ad.rssi)), ["180f"],
                               backend=BleakScannerBlefleet, socket_path=fake.path)
        assert not HAS_BACKEND_ID or scanner.backend_id == "BleakScannerBlefleet"
        async with scanner:
            await asyncio.sleep(0.3)
        return [d.address for d in scanner.discovered_devices]
    assert run(scenario()) == [THERMO]
    assert detected == [(THERMO, -50)]
    assert fake.calls("devices.watch") == [(1, {"services": [u16(0x180F)]})]


@both_orders
def test_find_device_by_address_and_a_device_never_heard(fake: FakeDaemon) -> None:
    async def scenario() -> tuple[Any, Any]:
        found = await BleakScanner.find_device_by_address(PLAIN.lower(), timeout=5, backend=BleakScannerBlefleet,
                                                          socket_path=fake.path)
        missing = await BleakScanner.find_device_by_address(UNHEARD, timeout=0.3, backend=BleakScannerBlefleet,
                                                            socket_path=fake.path)
        return found, missing
    found, missing = run(scenario())
    assert found is not None and found.address == PLAIN and found.details["adapter"] == "hci1"
    assert missing is None
    assert [m for _, m, _ in fake.requests] == ["devices.watch", "devices.unwatch"] * 2


def test_the_socket_comes_from_blefleet_socket_when_not_given(fake: FakeDaemon,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLEFLEET_SOCKET", fake.path)

    async def scenario() -> list[Any]:
        return await BleakScanner.discover(0.2, backend=BleakScannerBlefleet)
    assert sorted(d.address for d in run(scenario())) == [THERMO, PLAIN]


# -- the client ----------------------------------------------------------------------------


def test_connect_builds_the_service_tree_and_reads_and_writes_by_handle(fake: FakeDaemon) -> None:
    gone: list[BleakClient] = []

    async def scenario() -> dict[str, Any]:
        client = BleakClient(THERMO, gone.append, timeout=7, backend=BleakClientBlefleet, socket_path=fake.path)
        out: dict[str, Any] = {"before": client.is_connected}
        await client.connect()
        out["connected"] = client.is_connected
        out["mtu"], out["name"] = client.mtu_size, client._backend.name
        out["tree"] = [(s.handle, s.uuid, [(c.handle, c.uuid, c.properties, [(d.handle, d.uuid) for d in c.descriptors])
                                           for c in s.characteristics]) for s in client.services]
        battery = client.services.get_characteristic("2a19")
        assert battery is not None
        out["wwr"] = battery.max_write_without_response_size
        out["battery"] = await client.read_gatt_char("2a19")
        out["description"] = await client.read_gatt_descriptor(0x000E)
        await client.write_gatt_char(STORE, b"\x01\x02", response=True)
        await client.write_gatt_char(STORE, bytearray(b"\x03"), response=False)
        await client.write_gatt_char(0x0011, memoryview(b"\x04\x05"))  # no response=: the "write" property
        out["store"] = await client.read_gatt_char(0x0011)
        await client.write_gatt_descriptor(0x000E, b"Cell")
        await client.disconnect()
        out["after"] = client.is_connected
        return out
    out = run(scenario())
    assert (out["before"], out["connected"], out["after"]) == (False, True, False)
    assert (out["mtu"], out["name"], out["wwr"]) == (247, "fake-thermo", 244)
    assert out["tree"] == [
        (0x000A, u16(0x180F), [(0x000B, u16(0x2A19), ["read", "notify"],
                                [(0x000D, u16(0x2902)), (0x000E, u16(0x2901))])]),
        (0x0010, CUSTOM_SERVICE, [(0x0011, STORE, ["read", "write", "write-without-response"], []),
                                  (0x0013, SECRET, ["read", "write"], []), (0x0015, SLUGGISH, ["read"], [])])]
    assert out["battery"] == bytearray(b"\x64") and isinstance(out["battery"], bytearray)
    assert out["description"] == bytearray(b"Battery")
    assert out["store"] == bytearray(b"\x04\x05")
    assert fake.values[0x000E] == b"Cell".hex()
    assert [(m, p) for _, m, p in fake.requests] == [
        ("device.connect", {"address": THERMO, "timeoutMs": 7000}),
        # Reads and writes wait as long as BlueZ lets an ATT request wait (30 s).
        ("device.read", {"address": THERMO, "handle": 0x000B, "timeoutMs": 30000}),
        ("device.read", {"address": THERMO, "handle": 0x000E, "descriptor": True, "timeoutMs": 30000}),
        ("device.write", {"address": THERMO, "handle": 0x0011, "value": "0102", "withResponse": True, "timeoutMs": 30000}),
        ("device.write", {"address": THERMO, "handle": 0x0011, "value": "03", "withResponse": False, "timeoutMs": 30000}),
        ("device.write", {"address": THERMO, "handle": 0x0011, "value": "0405", "withResponse": True, "timeoutMs": 30000}),
        ("device.read", {"address": THERMO, "handle": 0x0011, "timeoutMs": 30000}),
        ("device.write", {"address": THERMO, "handle": 0x000E, "value": b"Cell".hex(), "descriptor": True,
                          "timeoutMs": 30000}),
        ("device.disconnect", {"address": THERMO}),
    ]
    # disconnect() calls the disconnected callback once, as bleak's own backends do, and
    # the connection (the lease) is closed.
    assert len(gone) == 1 and isinstance(gone[0], BleakClient)
    assert fake.closed(1)


def test_each_client_has_its_own_connection_and_lease(fake: FakeDaemon) -> None:
    async def scenario() -> None:
        async with BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path):
            async with BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path):
                assert sum(1 for p in fake.peers if THERMO in p.leases) == 2
    run(scenario())
    assert [n for n, _ in fake.calls("device.connect")] == [1, 2]
    assert [n for n, _ in fake.calls("device.disconnect")] == [2, 1]


@both_orders
def test_a_ble_device_from_the_scanner_connects(fake: FakeDaemon) -> None:
    async def scenario() -> bytearray:
        device = await BleakScanner.find_device_by_address(THERMO, backend=BleakScannerBlefleet,
                                                           socket_path=fake.path)
        assert device is not None
        async with BleakClient(device, backend=BleakClientBlefleet, socket_path=fake.path) as client:
            return await client.read_gatt_char(u16(0x2A19))
    assert run(scenario()) == bytearray(b"\x64")
    # bleak's default connect timeout (30 s in bleak 3), in ms.
    ((number, params),) = fake.calls("device.connect")
    assert number == 2 and params["address"] == THERMO and params["timeoutMs"] >= 10000


def test_notifications_reach_the_callback_until_stop_notify(fake: FakeDaemon) -> None:
    received: list[tuple[int, bytearray]] = []
    awaited: list[bytes] = []

    def on_value(sender: BleakGATTCharacteristic, data: bytearray) -> None:
        received.append((sender.handle, data))

    async def also(sender: BleakGATTCharacteristic, data: bytearray) -> None:
        awaited.append(bytes(data))

    async def scenario() -> None:
        async with BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path) as client:
            await client.start_notify("2a19", on_value)
            await until(lambda: len(received) == 1)  # the daemon's current value
            fake.run(lambda: fake.push_value(THERMO, 0x000B, "63"))
            fake.run(lambda: fake.push_value("11:22:33:44:55:66", 0x000B, "00", to_all=True))  # not this device
            await until(lambda: len(received) == 2)
            await client.stop_notify("2a19")
            # A value the daemon would still send is no longer the callback's.
            fake.run(lambda: fake.push_value(THERMO, 0x000B, "62", to_all=True))
            await asyncio.sleep(0.1)
            assert len(received) == 2
            await client.start_notify(0x000B, also)
            await until(lambda: len(awaited) == 1)
    run(scenario())
    assert received == [(0x000B, bytearray(b"\x64")), (0x000B, bytearray(b"\x63"))]
    assert all(isinstance(data, bytearray) for _, data in received)
    assert awaited == [b"\x64"]
    assert [p for _, p in fake.calls("device.notify")] == [
        {"address": THERMO, "handle": 0x000B, "on": True}, {"address": THERMO, "handle": 0x000B, "on": False},
        {"address": THERMO, "handle": 0x000B, "on": True}]


def test_the_disconnected_callback_follows_the_daemons_device_disconnected(fake: FakeDaemon) -> None:
    gone: list[BleakClient] = []

    async def scenario() -> None:
        client = BleakClient(THERMO, gone.append, backend=BleakClientBlefleet, socket_path=fake.path)
        await client.connect()
        fake.run(lambda: fake.drop_link(THERMO))
        await until(lambda: bool(gone))
        assert not client.is_connected
        with pytest.raises(BleakError):
            await client.read_gatt_char(0x000B)  # the services are gone with the link
        # The backend lets go of its connection; a later disconnect() is harmless.
        await until(lambda: ("closed", 1) in fake.events)
        await client.disconnect()
        # And it connects again, on a new connection.
        await client.connect()
        assert client.is_connected and await client.read_gatt_char(0x000B) == bytearray(b"\x64")
        await client.disconnect()
    run(scenario())
    assert len(gone) == 2  # once for the drop, once for the second connection's disconnect()
    assert [n for n, _ in fake.calls("device.connect")] == [1, 2]
    assert [n for n, _ in fake.calls("device.disconnect")] == [2]


def test_the_disconnected_callback_follows_the_end_of_the_socket(fake: FakeDaemon) -> None:
    gone: list[BleakClient] = []

    async def scenario() -> None:
        client = BleakClient(THERMO, gone.append, backend=BleakClientBlefleet, socket_path=fake.path)
        await client.connect()
        fake.run(fake.hang_up)
        await until(lambda: bool(gone))
        await asyncio.sleep(0.1)
        assert not client.is_connected
        await client.disconnect()  # nothing more to do: no second callback
    run(scenario())
    assert len(gone) == 1
    assert fake.calls("device.disconnect") == []


# -- errors --------------------------------------------------------------------------------


def test_att_errors_keep_their_code(fake: FakeDaemon) -> None:
    async def scenario() -> tuple[BaseException, BaseException]:
        async with BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path) as client:
            with pytest.raises(BleakError) as read:
                await client.read_gatt_char(SECRET)
            with pytest.raises(BleakError) as write:
                await client.write_gatt_char(SECRET, b"\x00", response=True)
            assert client.is_connected
            return read.value, write.value
    read, write = run(scenario())
    protocol_error = getattr(bleak.exc, "BleakGATTProtocolError", None)
    if protocol_error is not None:  # bleak >= 3.0
        assert isinstance(read, protocol_error) and isinstance(write, protocol_error)
        assert (int(read.code), int(write.code)) == (2, 3)
        assert read.code.name == "READ_NOT_PERMITTED"
        assert "read not permitted" in " ".join(getattr(read, "__notes__", []))
    else:
        assert (read.att_error, write.att_error) == (2, 3)


def test_timeouts_are_timeout_errors(fake: FakeDaemon) -> None:
    async def scenario() -> tuple[BaseException, BaseException, BaseException]:
        async with BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path) as client:
            with pytest.raises(TimeoutError) as read:
                await client.read_gatt_char(SLUGGISH)
        with pytest.raises(asyncio.TimeoutError) as connect:
            await BleakClient(SLOW, timeout=2.5, backend=BleakClientBlefleet, socket_path=fake.path).connect()
        return read.value, connect.value
    read, connect = run(scenario())
    assert "timed out" in str(read) and "2500 ms" in str(connect)


def test_a_full_house_is_out_of_slots_as_the_retry_libraries_read_it(fake: FakeDaemon) -> None:
    """A connect that found no slot (all in use, its turn in the queue not come, or the user's
    share of the slots, leases-per-user, taken) is a
    BleakError saying "connection slot": bleak-retry-connector's OUT_OF_SLOTS_ERRORS, which it
    backs off from and retries, not the TimeoutError it takes for a device gone missing."""
    async def scenario() -> list[BaseException]:
        errors = []
        for address in (WAITED, QUEUED, LIMITED):
            with pytest.raises(BleakError) as refused:
                await BleakClient(address, timeout=3, backend=BleakClientBlefleet, socket_path=fake.path).connect()
            errors.append(refused.value)
        return errors
    for error in run(scenario()):
        assert isinstance(error, BleakFleetOutOfSlotsError) and not isinstance(error, TimeoutError), repr(error)
        # bleak-retry-connector 4.x: OUT_OF_SLOTS_ERRORS = {"available connection", "connection slot", ...}
        assert "connection slot" in str(error), error
    assert fake.closed(3)


def test_a_connect_longer_than_one_call_of_the_daemon_is_several(fake: FakeDaemon) -> None:
    """bleak takes any connect timeout; the daemon takes 600 s in one call. A timeout of 900 s
    is a first call of 600 s and, if that one timed out, another of what is left."""
    async def scenario() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await BleakClient(SLOW, timeout=900, backend=BleakClientBlefleet, socket_path=fake.path).connect()
    run(scenario())
    asked = [p["timeoutMs"] for _, m, p in fake.requests if m == "device.connect"]
    assert asked[0] == 600_000 and len(asked) == 2 and 299_000 < asked[1] <= 300_000, asked


def test_a_connect_aborted_by_the_controller_is_tried_again(fake: FakeDaemon) -> None:
    """le-connection-abort-by-local is retried within the connect's time, as bleak's BlueZ
    backend does: the script sees a connected client, and the daemon saw three connects."""
    async def scenario() -> bool:
        async with BleakClient(ABORTED, timeout=5, backend=BleakClientBlefleet, socket_path=fake.path) as client:
            return client.is_connected
    assert run(scenario())
    assert fake.aborts == 3


@pytest.mark.skipif(not hasattr(bleak.exc, "BleakBluetoothNotAvailableError"), reason="bleak < 2.0 has no such error")
def test_bluetooth_not_available_is_bleaks_own_error_with_its_reason(fake: FakeDaemon) -> None:
    async def scenario() -> list[BaseException]:
        errors = []
        for address in (POWERED_OFF, NO_BLUEZ):
            with pytest.raises(BleakError) as refused:
                await BleakClient(address, timeout=3, backend=BleakClientBlefleet, socket_path=fake.path).connect()
            errors.append(refused.value)
        return errors
    off, no_bluez = run(scenario())
    reason = getattr(bleak.exc, "BleakBluetoothNotAvailableReason")
    assert isinstance(off, getattr(bleak.exc, "BleakBluetoothNotAvailableError")) and getattr(off, "reason") == reason.POWERED_OFF
    assert "powered off" in str(off)
    assert getattr(no_bluez, "reason") == reason.UNKNOWN and "BlueZ is not running" in str(no_bluez)


def test_an_address_no_adapter_hears_is_bleaks_device_not_found(fake: FakeDaemon) -> None:
    async def scenario() -> BleakDeviceNotFoundError:
        client = BleakClient(UNHEARD.lower(), backend=BleakClientBlefleet, socket_path=fake.path)
        with pytest.raises(BleakDeviceNotFoundError) as refused:
            await client.connect()
        assert not client.is_connected
        return refused.value
    refused = run(scenario())
    assert refused.identifier == UNHEARD and "not heard" in str(refused)
    # The failed connect let go of its connection.
    assert fake.closed(1)


def test_other_errors_are_bleak_errors_with_the_daemons_sentence(fake: FakeDaemon, tmp_path: Path) -> None:
    async def scenario() -> tuple[BaseException, BaseException, BaseException, BaseException]:
        with pytest.raises(BleakError) as crowded:
            await BleakClient(CROWDED, backend=BleakClientBlefleet, socket_path=fake.path).connect()
        async with BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path) as client:
            with pytest.raises(BleakError) as no_notify:
                await client.start_notify(STORE, lambda c, d: None)
        with pytest.raises(BleakError) as unreachable:
            await BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=str(tmp_path / "none.sock")).connect()
        with pytest.raises(BleakError) as no_scan:
            await BleakScanner.discover(0.1, backend=BleakScannerBlefleet,
                                        socket_path=str(tmp_path / "none.sock"))
        return crowded.value, no_notify.value, unreachable.value, no_scan.value
    crowded, no_notify, unreachable, no_scan = run(scenario())
    assert "connection slot" in str(crowded) and getattr(crowded, "code") == -32004
    # A characteristic that neither notifies nor indicates: what BlueZ answers StartNotify,
    # as bleak raises it, before anything is asked of the daemon.
    assert isinstance(no_notify, BleakDBusError) and no_notify.dbus_error == "org.bluez.Error.NotSupported", repr(no_notify)
    for error in (unreachable, no_scan):
        assert str(tmp_path / "none.sock") in str(error) and "BLEFLEET_SOCKET" in str(error), error


def test_pair_and_unpair_are_the_daemons_device_pair_and_unpair(fake: FakeDaemon) -> None:
    gone: list[str] = []

    async def scenario() -> tuple[BaseException, BaseException, bool]:
        client = BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path,
                             disconnected_callback=lambda c: gone.append(c.address))
        await client.connect()
        await client.pair()
        await client.pair()  # paired already: nothing more, as bleak's BlueZ backend does
        # A passkey that is not the one the device shows: the daemon's sentence, a BleakError.
        with pytest.raises(BleakError, match="shows passkey 123456, not the 000042 given") as wrong:
            await client.pair(passkey=42)
        await client.unpair()  # the device goes from BlueZ, and this client is disconnected
        connected = client.is_connected
        # Unpairing needs no connection; a device BlueZ does not know is bleak's "not found".
        with pytest.raises(BleakDeviceNotFoundError) as unknown:
            await BleakClient(UNHEARD, backend=BleakClientBlefleet, socket_path=fake.path).unpair()
        return wrong.value, unknown.value, connected
    wrong, unknown, connected = run(scenario())
    assert getattr(wrong, "code") == -32013
    # As bleak's BlueZ backend raises a refused Pair: BlueZ's D-Bus error.
    assert isinstance(wrong, BleakDBusError) and wrong.dbus_error == "org.bluez.Error.AuthenticationFailed", repr(wrong)
    assert getattr(unknown, "identifier", THERMO) == UNHEARD
    assert not connected and gone == [THERMO]
    pairs = [params for _, method, params in fake.requests if method == "device.pair"]
    assert [p.get("passkey") for p in pairs] == [None, None, 42], pairs
    assert all(p["address"] == THERMO and p["timeoutMs"] == 60_000 for p in pairs), pairs
    assert [params for _, method, params in fake.requests if method == "device.unpair"] == [
        {"address": THERMO}, {"address": UNHEARD}]
    assert fake.paired == set()


def test_a_pairing_the_device_drops_is_bleaks_pairing_failure_not_an_unreachable_daemon(fake: FakeDaemon) -> None:
    """When the link goes down in the middle of a pairing, the client's connection to the
    daemon ends with it; the script sees what bleak's BlueZ backend raises for a failed Pair
    (BleakDBusError AuthenticationFailed) and its disconnected callback, not "blefleetd cannot
    be reached"."""
    gone: list[str] = []

    async def scenario() -> tuple[BaseException, bool]:
        client = BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path,
                             disconnected_callback=lambda c: gone.append(c.address))
        await client.connect()
        with pytest.raises(BleakError) as failed:
            await client.pair(passkey=666)
        return failed.value, client.is_connected
    failed, connected = run(scenario())
    assert isinstance(failed, BleakDBusError) and failed.dbus_error == "org.bluez.Error.AuthenticationFailed", repr(failed)
    assert "cannot be reached" not in str(failed)
    assert not connected and gone == [THERMO]


def test_connect_with_pair_pairs_after_connecting(fake: FakeDaemon) -> None:
    async def scenario() -> None:
        async with BleakClient(THERMO, backend=BleakClientBlefleet, socket_path=fake.path, pair=True) as client:
            assert client.is_connected
    run(scenario())
    methods = [method for _, method, _ in fake.requests if method.startswith("device.")]
    assert methods[:2] == ["device.connect", "device.pair"], methods
    assert fake.paired == {THERMO}


# -- plain BleakClient/BleakScanner: install() and the launcher ------------------------------


def test_install_makes_plain_bleak_use_the_fleet_and_uninstall_undoes_it(fake: FakeDaemon,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BLEFLEET_SOCKET", raising=False)
    native = type(BleakClient(THERMO)._backend)
    install(fake.path)
    try:
        assert installed() and os.environ["BLEFLEET_SOCKET"] == fake.path
        client, scanner = BleakClient(THERMO), BleakScanner()
        assert isinstance(client._backend, BleakClientBlefleet) and isinstance(scanner._backend, BleakScannerBlefleet)
        if HAS_BACKEND_ID:
            assert (client.backend_id, scanner.backend_id) == ("blefleet", "blefleet")

        async def scenario() -> bytearray:
            async with BleakClient(THERMO) as connected:
                return await connected.read_gatt_char("2a19")
        assert run(scenario()) == bytearray(b"\x64")
    finally:
        uninstall()
        monkeypatch.delenv("BLEFLEET_SOCKET", raising=False)
    assert not installed() and type(BleakClient(THERMO)._backend) is native


SCRIPT = '''
import asyncio
import sys

from bleak import BleakClient, BleakScanner


async def main(address):
    device = await BleakScanner.find_device_by_address(address, timeout=5)
    print("found", device.address, device.name)
    seen = await BleakScanner.discover(0.3, service_uuids=["0000180f-0000-1000-8000-00805f9b34fb"])
    print("filtered", sorted(d.address for d in seen))
    got = asyncio.Event()

    def on_battery(sender, data):
        print("notified", sender.uuid[4:8], data.hex())
        got.set()

    async with BleakClient(device) as client:
        print("backend", getattr(client, "backend_id", "blefleet"), client.mtu_size)  # bleak >= 2.0
        for service in client.services:
            print("service", service.handle, service.uuid[4:8], [c.handle for c in service.characteristics])
        print("battery", (await client.read_gatt_char("2a19"))[0])
        await client.write_gatt_char("12345678-1234-5678-1234-56789abcdef1", b"hi", response=True)
        print("store", (await client.read_gatt_char("12345678-1234-5678-1234-56789abcdef1")).decode())
        await client.start_notify("2a19", on_battery)
        await asyncio.wait_for(got.wait(), 5)
        await client.stop_notify("2a19")
    print("argv", sys.argv[1:], __name__)


asyncio.run(main(sys.argv[1]))
'''


def launch(*args: str, cwd: Path, socket: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH")]))}
    env.pop("BLEFLEET_SOCKET", None)
    if socket is not None:
        env["BLEFLEET_SOCKET"] = socket
    return subprocess.run([sys.executable, "-m", "blefleet.bleak", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=env)


def test_the_launcher_runs_an_unchanged_bleak_script_through_the_fleet(fake: FakeDaemon, tmp_path: Path) -> None:
    script = tmp_path / "tiny.py"
    script.write_text(SCRIPT)
    done = launch(str(script), THERMO.lower(), "--extra", cwd=tmp_path, socket=fake.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"found {THERMO} fake-thermo",
        f"filtered ['{THERMO}']",
        "backend blefleet 247",
        "service 10 180f [11]",
        "service 16 " + CUSTOM_SERVICE[4:8] + " [17, 19, 21]",
        "battery 100",
        "store hi",
        "notified 2a19 64",
        f"argv ['{THERMO.lower()}', '--extra'] __main__",
    ]
    assert fake.values[0x0011] == b"hi".hex()
    methods = [m for _, m, _ in fake.requests]
    assert methods[:4] == ["devices.watch", "devices.unwatch", "devices.watch", "devices.unwatch"]
    assert fake.calls("devices.watch")[1][1] == {"services": [u16(0x180F)]}
    assert methods[-3:] == ["device.notify", "device.notify", "device.disconnect"]


def test_the_launcher_takes_a_socket_and_runs_a_module(fake: FakeDaemon, tmp_path: Path) -> None:
    (tmp_path / "tinyscan.py").write_text(textwrap.dedent('''
        import asyncio, sys
        from bleak import BleakScanner
        devices = asyncio.run(BleakScanner.discover(0.2))
        print(sys.argv[1:], sorted(d.address for d in devices))
    '''))
    done = launch("--socket", fake.path, "-m", "tinyscan", "a", "b", cwd=tmp_path, socket="/nonexistent/elsewhere.sock")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"['a', 'b'] ['{THERMO}', '{PLAIN}']"


def test_the_launcher_says_what_the_daemon_being_unreachable_means(tmp_path: Path) -> None:
    script = tmp_path / "tiny.py"
    script.write_text(SCRIPT)
    done = launch(str(script), THERMO, cwd=tmp_path, socket=str(tmp_path / "none.sock"))
    assert done.returncode == 1
    assert "BleakFleetError" in done.stderr and "blefleetd cannot be reached" in done.stderr


@pytest.mark.parametrize("args", [[], ["--socket"], ["--frobnicate", "x.py"], ["-m"], ["no-such-script.py"],
                                  ["-m", "no_such_module_here"]])
def test_the_launcher_answers_bad_arguments_with_its_usage(tmp_path: Path, args: list[str]) -> None:
    done = launch(*args, cwd=tmp_path, socket=None)
    assert done.returncode == 2
    assert "usage: python3 -m blefleet.bleak [--socket PATH] SCRIPT.py" in done.stderr


@both_orders
def test_an_adapter_named_pins_the_scan_to_it(fake: FakeDaemon) -> None:
    """bluez={"adapter": "hci1"} (and bleak's adapter=) scans on that adapter alone, as
    bleak's BlueZ backend does: THERMO is heard through hci0 only."""
    async def scenario() -> tuple[list[str], list[str]]:
        pinned = await BleakScanner.discover(0.3, backend=BleakScannerBlefleet, socket_path=fake.path,
                                             bluez={"adapter": "hci1"})
        other = await BleakScanner.discover(0.3, backend=BleakScannerBlefleet, socket_path=fake.path,
                                            bluez={"adapter": "hci0"})
        return [d.address for d in pinned], [d.address for d in other]
    assert run(scenario()) == ([PLAIN], [THERMO])


@both_orders
def test_bluez_filters_are_applied_to_the_reports(fake: FakeDaemon) -> None:
    async def scenario() -> tuple[list[str], list[str], list[str]]:
        strong = await BleakScanner.discover(0.3, backend=BleakScannerBlefleet, socket_path=fake.path,
                                             bluez={"filters": {"RSSI": -55}})
        named = await BleakScanner.discover(0.3, backend=BleakScannerBlefleet, socket_path=fake.path,
                                            bluez={"filters": {"Pattern": "fake-th"}})
        battery = await BleakScanner.discover(0.3, backend=BleakScannerBlefleet, socket_path=fake.path,
                                              bluez={"filters": {"UUIDs": ["180f"]}})
        return [d.address for d in strong], [d.address for d in named], [d.address for d in battery]
    assert run(scenario()) == ([THERMO], [THERMO], [THERMO])
    # The UUIDs filter is the daemon's too.
    assert {"services": [u16(0x180F)]} in [p for _, p in fake.calls("devices.watch")]


@both_orders
def test_passive_scanning_takes_or_patterns_and_without_them_is_refused_in_bleaks_words(fake: FakeDaemon) -> None:
    async def scenario() -> list[str]:
        with pytest.raises(BleakError, match="passive scanning mode requires bluez or_patterns"):
            BleakScanner(backend=BleakScannerBlefleet, socket_path=fake.path, scanning_mode="passive")
        # Manufacturer data of company 89 (0x0059, little-endian on the air) starting 01 02.
        found = await BleakScanner.discover(0.3, backend=BleakScannerBlefleet, socket_path=fake.path,
                                            scanning_mode="passive",
                                            bluez={"or_patterns": [(0, 0xFF, b"\x59\x00\x01\x02")]})
        return [d.address for d in found]
    assert run(scenario()) == [THERMO]
